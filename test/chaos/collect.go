package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// collect gathers, after the final reads, what the log and secret scans need:
// the operator's and the members' logs (current and previous containers), the
// namespace's Events, the event logs, the statuses, the Secrets' values, and
// the forced reconfigs the event logs record. The raw texts also go to
// ReportDir/logs for a person.
func (r *run) collect(ctx context.Context) {
	h := &r.rec.h
	h.Logs = map[string]string{}
	r.podLogs(ctx, operatorNamespace, "app.kubernetes.io/name=mgors-operator", "operator/")
	r.podLogs(ctx, r.ns, "", "member/"+r.ns+"/")
	h.Logs["events"] = r.events(ctx)
	h.Logs["lease"] = r.leases.text()
	for _, t := range r.clusters {
		h.Logs["eventlog/"+t.key] = r.eventLog(ctx, t)
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if m, err := r.mgors.Mgorses(t.ns).Get(gctx, t.name, metav1.GetOptions{}); err == nil {
			b, _ := json.MarshalIndent(m.Status, "", "  ")
			h.Logs["status/"+t.key] = string(b)
		}
		cancel()
	}
	h.Secrets = r.secrets(ctx)
	if r.cfg.ReportDir != "" {
		r.writeLogs(filepath.Join(r.cfg.ReportDir, "logs"))
	}
}

// podLogs reads the logs of every container of the pods selected, current and
// previous, into History.Logs under prefix+pod (+"/previous").
func (r *run) podLogs(ctx context.Context, ns, selector, prefix string) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	pods, err := r.kube.CoreV1().Pods(ns).List(lctx, metav1.ListOptions{LabelSelector: selector})
	cancel()
	if err != nil {
		r.rec.h.Logs[prefix+"(list)"] = err.Error()
		return
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			name := prefix + p.Name
			if len(p.Spec.Containers) > 1 {
				name += "/" + c.Name
			}
			if s, err := r.logOf(ctx, ns, p.Name, c.Name, false); err == nil {
				r.rec.h.Logs[name] = s
			}
			if s, err := r.logOf(ctx, ns, p.Name, c.Name, true); err == nil && s != "" {
				r.rec.h.Logs[name+"/previous"] = s
			}
		}
	}
}

func (r *run) logOf(ctx context.Context, ns, pod, container string, previous bool) (string, error) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rc, err := r.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous}).Stream(lctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// events is the run namespace's Kubernetes Events, one line each, in order.
func (r *run) events(ctx context.Context) string {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := r.kube.CoreV1().Events(r.ns).List(lctx, metav1.ListOptions{})
	if err != nil {
		return "error: " + err.Error()
	}
	sort.Slice(l.Items, func(i, j int) bool { return eventTime(&l.Items[i]).Before(eventTime(&l.Items[j])) })
	var b strings.Builder
	for _, e := range l.Items {
		fmt.Fprintf(&b, "%s %s %s/%s %s: %s\n", eventTime(&e).Format(time.RFC3339Nano), e.Type,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String()
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// eventLog is a cluster's event log as JSON lines (the records as the operator
// wrote them): what the run followed while it ran and what the kube store
// holds at the end, so no record a snapshot compacted meanwhile is missing.
// It notes the log's forced reconfigs.
func (r *run) eventLog(ctx context.Context, t *target) string {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store := eventlog.NewKube(r.kube)
	streams, err := store.StreamsIn(lctx, t.ns)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, s := range streams {
		if s.Key() != t.key {
			continue
		}
		_, loaded, err := store.Load(lctx, s)
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			continue
		}
		for _, rec := range r.followed.merged(s, loaded) {
			line, _ := json.Marshal(rec)
			b.Write(append(line, '\n'))
			if e, ok, err := actors.Decode(rec); err == nil && ok {
				if a, isStart := e.(actors.ActionStarted); isStart && a.Action == actors.ActForceReconfig {
					r.rec.h.Forced = append(r.rec.h.Forced, ForcedReconfig{At: rec.Time, Cluster: t.key,
						MajorityAnswered: r.majorityAnswered(t, rec.Time)})
				}
				r.noteRecovery(t, rec.Time, e)
			}
		}
	}
	return b.String()
}

// majorityAnswered says whether, in the samples of the 5 s before at, a
// majority of t's voters answered hello.
func (r *run) majorityAnswered(t *target, at time.Time) bool {
	answered := map[string]bool{}
	for _, s := range r.rec.samplesOf(t.key, at.Add(-5*time.Second), at) {
		if s.Error == "" {
			answered[s.Member] = true
		}
	}
	return len(answered) > len(t.hosts)/2
}

// secrets are the values of every Secret of the run's clusters (labelled with
// or owned by a Mgors), for the secret scan; a user name is not one (the
// operator's user, mgors-operator, is named like its Deployment and Lease,
// and mongod logs who authenticated); and the values a Scenario retired
// (Scene.KeepSecret).
func (r *run) secrets(ctx context.Context) []string {
	r.mu.Lock()
	out := append([]string(nil), r.kept...)
	r.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := r.kube.CoreV1().Secrets(r.ns).List(lctx, metav1.ListOptions{})
	if err != nil {
		return out
	}
	for _, s := range l.Items {
		owned := s.Labels[kube.LabelCluster] != ""
		for _, o := range s.OwnerReferences {
			owned = owned || o.Kind == "Mgors"
		}
		if !owned {
			continue
		}
		for k, v := range s.Data {
			if len(v) > 0 && k != v1alpha1.AdminUsernameSecretKey {
				out = append(out, string(v))
			}
		}
	}
	sort.Strings(out)
	return out
}

// writeLogs writes every collected text to dir, one file per source.
func (r *run) writeLogs(dir string) {
	for src, text := range r.rec.h.Logs {
		p := filepath.Join(dir, strings.ReplaceAll(src, "/", "_")+".log")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				r.log.Warn().Err(err).Str("file", p).Msg("writing a log")
			}
		}
	}
}
