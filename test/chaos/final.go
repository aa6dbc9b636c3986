package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// waitHealthy waits until every cluster is Healthy again after a heal at
// since, within the bound, and returns when. Healthy means what a person would
// check, not only the phase the operator wrote (which may still be the one
// from before the fault): the Mgors is Healthy at its generation, every member
// pod is Ready and not being deleted, and the samplers, after since, saw every
// member answer with exactly one primary.
func (r *run) waitHealthy(ctx context.Context, since time.Time) (time.Time, error) {
	var why string
	ok := until(ctx, r.cfg.Healthy, func() bool {
		for _, t := range r.clusters {
			if why = r.healthy(ctx, t, since); why != "" {
				return false
			}
		}
		return true
	})
	if !ok {
		return time.Time{}, fmt.Errorf("not Healthy within %s: %s", r.cfg.Healthy, why)
	}
	return time.Now(), nil
}

// healthy says why cluster t is not Healthy, "" when it is.
func (r *run) healthy(ctx context.Context, t *target, since time.Time) string {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := r.mgors.Mgorses(t.ns).Get(gctx, t.name, metav1.GetOptions{})
	if err != nil {
		return t.key + ": " + err.Error()
	}
	if m.Status.Phase != v1alpha1.PhaseHealthy || m.Status.ObservedGeneration != m.Generation {
		return fmt.Sprintf("%s: phase %s, generation %d observed %d", t.key, m.Status.Phase, m.Generation, m.Status.ObservedGeneration)
	}
	pods, err := r.kube.CoreV1().Pods(t.ns).List(gctx, metav1.ListOptions{LabelSelector: "mgors.io/cluster=" + t.name})
	if err != nil {
		return t.key + ": " + err.Error()
	}
	if len(pods.Items) != len(t.hosts) {
		return fmt.Sprintf("%s: %d pods, want %d", t.key, len(pods.Items), len(t.hosts))
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || !podReady(&p) {
			return fmt.Sprintf("%s: pod %s not Ready", t.key, p.Name)
		}
	}
	primaries := 0
	for i, s := range r.members.of(t) {
		switch {
		case s.At.Before(since):
			return fmt.Sprintf("%s: no sample of %s since the heal", t.key, t.hosts[i])
		case s.Error != "":
			return fmt.Sprintf("%s: %s: %s", t.key, s.Member, s.Error)
		case s.State == "PRIMARY":
			primaries++
		case s.State != "SECONDARY" && s.State != "ARBITER":
			return fmt.Sprintf("%s: %s is %s", t.key, s.Member, s.State)
		}
	}
	if primaries != 1 {
		return fmt.Sprintf("%s: %d primaries", t.key, primaries)
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// final reads what cluster t holds at the end: every inserted id and the
// registers with read concern majority from the primary, whether `mgorsctl
// replay --verify` passes, and the PVC UIDs.
func (r *run) final(ctx context.Context, t *target) Final {
	fin := Final{Cluster: t.key, Present: map[int64]bool{}, Registers: map[string]int64{}}
	if err := r.finalRead(ctx, t, &fin); err != nil {
		fin.ReadError = err.Error()
	}
	fin.ReplayError = r.replayVerify(ctx, t)
	var err error
	if fin.PVCEnd, err = r.pvcUIDs(ctx, t); err != nil {
		fin.ReadError = strings.TrimPrefix(fin.ReadError+"; ", "; ") + "PVCs: " + err.Error()
	}
	r.log.Info().Str("cluster", t.key).Int("present", len(fin.Present)).Str("replay", fin.ReplayError).Msg("final read")
	return fin
}

func (r *run) finalRead(ctx context.Context, t *target, fin *Final) error {
	c, err := t.appClient()
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Disconnect(dctx)
	}()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db := c.Database(database)
	majority := options.Collection().SetReadConcern(readconcern.Majority())
	cur, err := db.Collection(setColl, majority).Find(rctx, bson.D{})
	if err != nil {
		return fmt.Errorf("read the set: %w", err)
	}
	var docs []struct {
		ID int64 `bson:"_id"`
	}
	if err := cur.All(rctx, &docs); err != nil {
		return fmt.Errorf("read the set: %w", err)
	}
	for _, d := range docs {
		fin.Present[d.ID] = true
	}
	cur, err = db.Collection(registerColl, majority).Find(rctx, bson.D{})
	if err != nil {
		return fmt.Errorf("read the registers: %w", err)
	}
	var regs []struct {
		ID string `bson:"_id"`
		V  int64  `bson:"v"`
	}
	if err := cur.All(rctx, &regs); err != nil {
		return fmt.Errorf("read the registers: %w", err)
	}
	for _, g := range regs {
		fin.Registers[g.ID] = g.V
	}
	return nil
}

// replayVerify runs the built `mgorsctl replay --verify` on the cluster's
// event log (the kube store); it returns what it said when it failed.
func (r *run) replayVerify(ctx context.Context, t *target) string {
	bin := filepath.Join(r.cfg.Repo, "bin", "mgorsctl")
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "replay", "--verify", "--cluster", t.key)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(r.cfg.Dir, "kubeconfig"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("%v: %s", err, strings.TrimSpace(out.String()))
	}
	return ""
}
