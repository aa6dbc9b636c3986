package recovery

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
)

// rotateBound bounds a CA rotation of a 3-member set: three rolling
// restarts.
const rotateBound = 5 * time.Minute

// caRotation asks for a CA rotation and waits until it is over.
type caRotation struct {
	key, secret string
	old, now    []string // the fingerprints of ca.crt's CAs before and after
	start, done time.Time
	healthy     time.Time
	why         string // why it did not complete or the set was not Healthy
}

// caRequest is the value of the rotation's annotation.
const caRequest = "chaos-1"

func (cr *caRotation) run(ctx context.Context, s *chaos.Scene) error {
	c := s.Clusters()[0]
	cr.key = c.Namespace + "/" + c.Name
	mc := s.Mgors().Mgorses(c.Namespace)
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	m, err := mc.Get(gctx, c.Name, metav1.GetOptions{})
	cancel()
	if err != nil {
		return err
	}
	cr.secret = kube.CertificateSecretName(m)
	if cr.old, err = cas(ctx, s, c.Namespace, cr.secret); err != nil {
		return err
	}
	if len(cr.old) != 1 {
		return fmt.Errorf("ca.crt of %s holds %d CAs before the rotation, want 1", cr.secret, len(cr.old))
	}
	cr.start = time.Now()
	patch := []byte(`{"metadata":{"annotations":{"` + actors.RotateCAAnnotation + `":"` + caRequest + `"}}}`)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = mc.Patch(pctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	cancel()
	if err != nil {
		return fmt.Errorf("asking for the CA rotation: %w", err)
	}
	log := s.Log()
	log.Info().Str("cluster", cr.key).Str("old", cr.old[0]).Msg("CA rotation asked")
	if until(ctx, rotateBound, func() bool {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := mc.Get(gctx, c.Name, metav1.GetOptions{})
		cancel()
		if err != nil {
			cr.why = err.Error()
			return false
		}
		_, asked := m.Annotations[actors.RotateCAAnnotation]
		now, err := cas(ctx, s, c.Namespace, cr.secret)
		if err != nil {
			cr.why = err.Error()
			return false
		}
		cr.now = now
		cr.why = fmt.Sprintf("annotation present %t, ca.crt [%s], phase %s", asked, strings.Join(now, ", "), m.Status.Phase)
		return !asked && len(now) == 1 && now[0] != cr.old[0] && m.Status.Phase == v1alpha1.PhaseHealthy
	}) {
		cr.done = time.Now()
		cr.why = ""
	}
	from := cr.done
	if from.IsZero() {
		from = cr.start
	}
	at, err := s.WaitHealthy(ctx, from)
	if err == nil {
		cr.healthy = at
	} else {
		cr.why = strings.TrimPrefix(cr.why+"; ", "; ") + err.Error()
	}
	log.Info().Str("cluster", cr.key).Strs("now", cr.now).Bool("done", !cr.done.IsZero()).Str("why", cr.why).Msg("CA rotation over")
	healed := cr.done
	if healed.IsZero() {
		healed = time.Now()
	}
	s.Record(chaos.Fault{Kind: chaos.RotateCA, Cluster: cr.key, Targets: []string{c.Namespace + "/" + cr.secret},
		Start: cr.start, Healed: healed, Happened: !cr.done.IsZero(), HealthyAt: at,
		Evidence: fmt.Sprintf("%s=%s; ca.crt [%s] → [%s]; annotation removed %t", actors.RotateCAAnnotation, caRequest,
			strings.Join(cr.old, ", "), strings.Join(cr.now, ", "), !cr.done.IsZero())})
	return nil
}

// cas are the fingerprints of the CAs of a Secret's ca.crt (never a key).
func cas(ctx context.Context, s *chaos.Scene, ns, name string) ([]string, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sec, err := s.Kube().CoreV1().Secrets(ns).Get(gctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	_, fps := kube.CAs(sec.Data[kube.TLSCAKey])
	return fps, nil
}

// judge: the rotation completed (ca.crt holds one CA, not the old one; the
// annotation removed; Healthy), the event log shows its three steps rolled
// and CARotated from old to the new CA, and the workload wrote and read
// over TLS through it and after it (the clients then trust the new CA
// alone, and every connection after the last restart verified against it).
func (cr *caRotation) judge(t *testing.T, h *chaos.History, recs []writtenRecord) {
	t.Helper()
	if cr.done.IsZero() || cr.healthy.IsZero() {
		t.Fatalf("CA rotation: completed %t, Healthy after %t: %s", !cr.done.IsZero(), !cr.healthy.IsZero(), cr.why)
	}
	var steps, rolled []int
	var rotated *actors.CARotated
	for _, r := range recs {
		switch e := r.Event.(type) {
		case actors.CARotationStep:
			if e.Request == caRequest {
				steps = append(steps, e.Step)
			}
		case actors.CAStepRolled:
			if e.Request == caRequest {
				rolled = append(rolled, e.Step)
			}
		case actors.CARotated:
			if e.Request == caRequest {
				rotated = &e
			}
		}
	}
	if want := []int{1, 2, 3}; !slices.Equal(steps, want) || !slices.Equal(rolled, want) {
		t.Errorf("CA rotation: steps written %v, rolled %v; want %v each", steps, rolled, want)
	}
	if rotated == nil || rotated.Old != cr.old[0] || rotated.New != cr.now[0] {
		t.Errorf("CA rotation: CARotated %+v; want from %s to %s", rotated, cr.old[0], cr.now[0])
	}
	var during, after int
	for _, op := range h.Ops {
		if op.Cluster != cr.key || op.Outcome != chaos.OK || op.Kind == chaos.Read {
			continue
		}
		switch {
		case op.Start.After(cr.start) && op.End.Before(cr.done):
			during++
		case op.Start.After(cr.healthy):
			after++
		}
	}
	if during == 0 || after == 0 {
		t.Errorf("CA rotation: %d writes acknowledged during the rotation, %d after it; want some of each", during, after)
	}
	t.Logf("CA rotation %s → %s: asked at %s; done +%s; Healthy +%s; %d writes acknowledged during it, %d after",
		cr.old[0], cr.now[0], cr.start.UTC().Format(time.RFC3339), since(cr.start, cr.done), since(cr.start, cr.healthy), during, after)
}
