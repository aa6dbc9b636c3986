package secretscan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/mongo/backup/store"
)

// Texts are what the operator wrote that a person or another program can
// read, by source ("operator/POD", "events", "eventlog/NS/NAME", "status/NS/NAME", "backup/NS/NAME", "restore/NS/NAME").
type Texts map[string]string

// callTimeout bounds each API call of Collect.
const callTimeout = 30 * time.Second

// Secrets are the values of every Secret of a Mgors in namespace (labelled
// with its cluster or owned by one), and the secret key of every store a
// MgorsBackup of namespace names; a user name or an access key ID is not
// one (the operator's user is named like its Deployment, and mongod logs
// who authenticated).
func Secrets(ctx context.Context, kc kubernetes.Interface, mc client.Interface, namespace string) ([]string, error) {
	lctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	l, err := kc.CoreV1().Secrets(namespace).List(lctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	backups, err := mc.MgorsBackups(namespace).List(lctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing MgorsBackups: %w", err)
	}
	stores := map[string]bool{}
	for _, b := range backups.Items {
		stores[b.Spec.Store.CredentialsSecretRef.Name] = true
	}
	var out []string
	for _, s := range l.Items {
		if v := s.Data[store.SecretAccessKeyKey]; stores[s.Name] && len(v) > 0 {
			out = append(out, string(v))
		}
		owned := s.Labels[kube.LabelCluster] != ""
		for _, o := range s.OwnerReferences {
			owned = owned || o.Kind == v1alpha1.Kind
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
	return out, nil
}

// Collect reads what the operator wrote about the clusters of namespace: the
// logs of the operator's pods in operatorNamespace (current and previous
// containers), the namespace's Events, the event logs kept in it, and the
// Mgors statuses. A source that cannot be read is an error, never skipped.
func Collect(ctx context.Context, kc kubernetes.Interface, mc client.Interface, operatorNamespace, namespace string) (Texts, error) {
	t := Texts{}
	lctx, cancel := context.WithTimeout(ctx, callTimeout)
	pods, err := kc.CoreV1().Pods(operatorNamespace).List(lctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=mgors-operator"})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("listing the operator's pods: %w", err)
	}
	for _, p := range pods.Items {
		for _, previous := range []bool{false, true} {
			s, err := logOf(ctx, kc, p.Namespace, p.Name, previous)
			// A pod still starting has no log yet; a running one must give it.
			if err != nil && !previous && p.Status.Phase == corev1.PodRunning {
				return nil, fmt.Errorf("log of %s: %w", p.Name, err)
			}
			if err == nil {
				t[fmt.Sprintf("operator/%s/previous=%v", p.Name, previous)] = s
			}
		}
	}

	lctx, cancel = context.WithTimeout(ctx, callTimeout)
	events, err := kc.CoreV1().Events(namespace).List(lctx, metav1.ListOptions{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("listing Events: %w", err)
	}
	var b strings.Builder
	for _, e := range events.Items {
		fmt.Fprintf(&b, "%s %s/%s %s: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	t["events"] = b.String()

	store := eventlog.NewKube(kc)
	lctx, cancel = context.WithTimeout(ctx, callTimeout)
	defer cancel()
	streams, err := store.StreamsIn(lctx, namespace)
	if err != nil {
		return nil, fmt.Errorf("listing event logs: %w", err)
	}
	for _, s := range streams {
		snap, recs, err := store.Load(lctx, s)
		if err != nil {
			return nil, fmt.Errorf("event log %s: %w", s.Key(), err)
		}
		var b strings.Builder
		if snap != nil {
			line, _ := json.Marshal(snap)
			b.Write(append(line, '\n'))
		}
		for _, r := range recs {
			line, _ := eventlog.EncodeLine(r)
			b.Write(line)
		}
		t["eventlog/"+s.Key()+"/"+s.UID] = b.String()
	}

	list, err := mc.Mgorses(namespace).List(lctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Mgors: %w", err)
	}
	for _, m := range list.Items {
		st, _ := json.Marshal(m.Status)
		t["status/"+namespace+"/"+m.Name] = string(st)
	}
	backups, err := mc.MgorsBackups(namespace).List(lctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing MgorsBackups: %w", err)
	}
	for _, b := range backups.Items {
		st, _ := json.Marshal(b.Status)
		t["backup/"+namespace+"/"+b.Name] = string(st)
	}
	restores, err := mc.MgorsRestores(namespace).List(lctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing MgorsRestores: %w", err)
	}
	for _, r := range restores.Items {
		st, _ := json.Marshal(r.Status)
		t["restore/"+namespace+"/"+r.Name] = string(st)
	}
	return t, nil
}

func logOf(ctx context.Context, kc kubernetes.Interface, ns, pod string, previous bool) (string, error) {
	lctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rc, err := kc.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Previous: previous}).Stream(lctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// Scan reports every secret found in texts, by source, naming the secret by
// number and length only.
func Scan(texts Texts, secrets []string) []string {
	s := New(secrets)
	var out []string
	for src, text := range texts {
		for _, l := range s.Find(text) {
			out = append(out, src+" "+l.String())
		}
	}
	sort.Strings(out)
	return out
}
