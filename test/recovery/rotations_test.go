package recovery

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
	"github.com/mgors/operator/test/localkube/harness"
)

// TestRotationsUnderLoad (issue 14) rotates the keyfile, then the CA, of a
// requireTLS 3-member set, each on a person's request (mgors.io/rotate-keyfile,
// mgors.io/rotate-ca), while the chaos workload writes and reads over TLS. The
// clients trust what ca.crt holds, re-read as an application re-reads its
// mounted file, so they go through [old], [old, new] and [new] as the members
// do. The checker finds no violation at all: no acknowledged write lost, the
// registers linearizable, one primary per term, Healthy after each rotation
// within the bound, no secret in any log (the retired key included).
//
// The keyfile rotation ends on one key other than before (compared by
// fingerprint), with every step in the event log in order and never more than
// one member pod away. The CA rotation ends with ca.crt holding one CA other
// than the first, the annotation removed, its steps in the event log, and the
// workload acknowledged during and after it (the members then present
// certificates of the new CA alone). Both run on one cluster: a cluster's
// start and the workload's warm-up cost as much as a rotation.
func TestRotationsUnderLoad(t *testing.T) {
	endToEnd(t)
	began := time.Now()
	repo, dir := upCluster(t)
	m := sampleMgors(t, repo)
	m.Name = "rotate"
	m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}

	var kr keyfileRotation
	var cr caRotation
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cfg := chaos.Config{Dir: dir, Repo: repo, Log: harness.Logger(t), Healthy: healthyBound,
		ReportDir: filepath.Join(repo, ".cache", "recovery-rotations"),
		Clusters:  []*v1alpha1.Mgors{m},
		Scenario: func(ctx context.Context, s *chaos.Scene) error {
			if err := kr.run(ctx, s); err != nil {
				return err
			}
			return cr.run(ctx, s)
		}}
	h, err := chaos.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := verdict(t, h, cfg.Healthy)
	recs := written(t, h.Logs["eventlog/"+h.Clusters[0]])
	kr.judge(t, recs, h, v)
	cr.judge(t, h, recs)
	t.Logf("keyfile and CA rotations under load: the run took %s (%s with the cluster's start and stop)",
		h.Ended.Sub(h.Started).Round(time.Second), time.Since(began).Round(time.Second))
}
