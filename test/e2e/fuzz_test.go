package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/test/localkube/harness"
)

// specInput is what the fuzzer varies of a Mgors spec.
type specInput struct {
	Members, Arbiters                    int
	Version, Size, Reclaim, ReplSetName  string
	Ordinal, Votes, Priority             int
	Hidden                               bool
	MajorityLoss, GracePeriod, Oplog     string
	ElectionTimeout, HeartbeatIntervalMs int
}

// object is the Mgors the input describes; an empty string or a negative
// number below -1000 leaves the field out.
func (in specInput) object(namespace string) map[string]any {
	spec := map[string]any{}
	setInt := func(m map[string]any, k string, v int) {
		if v >= -1000 {
			m[k] = v
		}
	}
	setStr := func(m map[string]any, k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	setInt(spec, "members", in.Members)
	setInt(spec, "arbiters", in.Arbiters)
	setStr(spec, "version", in.Version)
	setStr(spec, "replicaSetName", in.ReplSetName)
	storage := map[string]any{}
	setStr(storage, "size", in.Size)
	setStr(storage, "reclaim", in.Reclaim)
	if in.Oplog != "" {
		storage["oplogSizeMB"] = json.Number(in.Oplog)
	}
	spec["storage"] = storage
	if in.Ordinal >= -1000 {
		opt := map[string]any{"ordinal": in.Ordinal, "hidden": in.Hidden}
		setInt(opt, "votes", in.Votes)
		setInt(opt, "priority", in.Priority)
		spec["memberOptions"] = []any{opt}
	}
	rec := map[string]any{}
	setStr(rec, "majorityLoss", in.MajorityLoss)
	setStr(rec, "gracePeriod", in.GracePeriod)
	spec["recovery"] = rec
	rs := map[string]any{}
	setInt(rs, "electionTimeoutMillis", in.ElectionTimeout)
	setInt(rs, "heartbeatIntervalMillis", in.HeartbeatIntervalMs)
	spec["replicaSet"] = rs
	return map[string]any{"apiVersion": "mgors.io/v1alpha1", "kind": "Mgors",
		"metadata": map[string]any{"name": "fuzz", "namespace": namespace}, "spec": spec}
}

// generated are the deterministic inputs every `go test` run sends (the seed
// corpus): a fixed pseudo-random walk around valid and invalid values.
func generated(n int) []specInput {
	r := rand.New(rand.NewPCG(14, 7))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	num := func(xs ...int) int { return xs[r.IntN(len(xs))] }
	valid := specInput{Members: 3, Arbiters: -2000, Version: "7.0.14", Size: "1Gi", Ordinal: -2000, Votes: -2000,
		Priority: -2000, ElectionTimeout: -2000, HeartbeatIntervalMs: -2000}
	var out []specInput
	for i := range n {
		if i%2 == 0 { // a valid spec of another shape, with at most one field changed at random
			in := valid
			in.Members, in.Arbiters = num(1, 2, 3, 5, 7, 8, 50), num(-2000, 0, 1)
			if r.IntN(2) == 0 {
				in.Ordinal, in.Votes, in.Priority, in.Hidden = 0, num(0, 1), 0, r.IntN(2) == 0
			}
			in.Reclaim, in.MajorityLoss, in.GracePeriod = pick("", "Retain", "Delete"), pick("", "Manual", "Automatic"), pick("", "30s")
			switch r.IntN(6) {
			case 0:
				in.Members = num(0, 51, -1)
			case 1:
				in.Version = pick("6.0", "3.6.8", "seven", "9.0.0", "7.0.14-rc0")
			case 2:
				in.Size = pick("0", "-1Gi", "x", "1e3")
			case 3:
				in.Priority, in.Hidden, in.Ordinal = 5, true, 0
			}
			out = append(out, in)
			continue
		}
		out = append(out, specInput{
			Members: num(-2000, -1, 0, 1, 2, 3, 5, 7, 8, 50, 51), Arbiters: num(-2000, 0, 1, 2, -1),
			Version: pick("", "7.0.14", "8.0.0", "6.0", "3.6.8", "seven", "7.0.14-rc0"), Size: pick("", "1Gi", "0", "-1Gi", "1e3", "x"),
			Reclaim: pick("", "Retain", "Delete", "Keep"), ReplSetName: pick("", "rs0", "has space", "a/b", strings.Repeat("r", 70)),
			Ordinal: num(-2000, 0, 2, 49, 50, -1), Votes: num(-2000, 0, 1, 2), Priority: num(-2000, 0, 1, 1000, 1001),
			Hidden: r.IntN(2) == 0, MajorityLoss: pick("", "Manual", "Automatic", "Sometimes"),
			GracePeriod: pick("", "30s", "-5s", "forever"), Oplog: pick("", "990", "0", "-1", "1e9"),
			ElectionTimeout: num(-2000, 0, 1, 10000, 3600001), HeartbeatIntervalMs: num(-2000, 0, 2000, 60001),
		})
	}
	return out
}

// FuzzMgorsSpec sends generated Mgors to the API server (a dry-run create,
// so nothing is stored and no operator acts). Each is either rejected as
// Invalid with every cause naming its field, or accepted, and then safe for
// the operator: it decodes, its objects build, and the actor's pure
// decisions on a healthy observed world of that shape neither panic nor
// take an action that loses data (invariants 1 to 4). `go test` runs the
// seed corpus (a deterministic batch); `go test -fuzz FuzzMgorsSpec` explores.
func FuzzMgorsSpec(f *testing.F) {
	for _, in := range generated(60) {
		f.Add(in.Members, in.Arbiters, in.Version, in.Size, in.Reclaim, in.ReplSetName, in.Ordinal, in.Votes, in.Priority,
			in.Hidden, in.MajorityLoss, in.GracePeriod, in.Oplog, in.ElectionTimeout, in.HeartbeatIntervalMs)
	}
	env := harness.Shared(f)
	installCRD(f, env)
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		f.Fatal(err)
	}
	res := v1alpha1.SchemeGroupVersionResource
	f.Fuzz(func(t *testing.T, members, arbiters int, version, size, reclaim, rsName string, ordinal, votes, priority int,
		hidden bool, majorityLoss, grace, oplog string, election, heartbeat int) {
		in := specInput{members, arbiters, version, size, reclaim, rsName, ordinal, votes, priority, hidden,
			majorityLoss, grace, oplog, election, heartbeat}
		b, err := json.Marshal(in.object("default"))
		if err != nil {
			t.Skip("not JSON: the fuzzer's string is no valid UTF-8 value") // nothing a user can send
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(b); err != nil {
			t.Skipf("not an object a client can send: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, err := dc.Resource(res).Namespace("default").Create(ctx, &u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			rejectedNamingTheField(t, err, b)
			t.Logf("rejected: %v", err)
			return
		}
		var m v1alpha1.Mgors
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(got.Object, &m, true); err != nil {
			t.Fatalf("accepted but does not decode into the Go types: %v\n%s", err, b)
		}
		safeForTheOperator(t, &m, b)
	})
}

// rejectedNamingTheField: a rejection is Invalid (422) or BadRequest, and
// each of its causes names a field that its message shows.
func rejectedNamingTheField(t *testing.T, err error, sent []byte) {
	t.Helper()
	var st apierrors.APIStatus
	if !errors.As(err, &st) || !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		t.Fatalf("rejected, but not as invalid input: %v\n%s", err, sent)
	}
	details := st.Status().Details
	if details == nil || len(details.Causes) == 0 {
		if !strings.Contains(err.Error(), "spec") {
			t.Fatalf("rejected without naming a field: %v\n%s", err, sent)
		}
		return
	}
	for _, c := range details.Causes {
		if c.Field == "" || !strings.Contains(err.Error(), c.Field) {
			t.Fatalf("a cause without its field (%q): %v\n%s", c.Field, err, sent)
		}
	}
}

// destructive are the actions that may lose data or split a set: never
// right for a set that is healthy and shaped as its spec asks.
var destructive = map[actors.ActionKind]bool{
	actors.ActInitiate: true, actors.ActForceReconfig: true, actors.ActDeleteVolumes: true,
	actors.ActWipeMember: true, actors.ActForceDeletePod: true, actors.ActFencePod: true,
}

// safeForTheOperator builds m's objects and runs the actor's decisions from
// a fresh state (an operator restarted) on a healthy world of m's shape:
// every member up in the config InitialConfig gives, a primary, the users
// there. Decisions may ensure objects, set the budget or reconfigure; none
// may be destructive.
func safeForTheOperator(t *testing.T, m *v1alpha1.Mgors, sent []byte) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic on an accepted spec: %v\n%s", r, sent)
		}
	}()
	m.UID, m.Generation = "fuzz-uid", 1
	m.Default()
	const domain = "cluster.local"
	_ = kube.StatefulSet(m, kube.Options{ClusterDomain: domain})
	_ = kube.HeadlessService(m)
	if m.Spec.Arbiters > 0 {
		_ = kube.ArbiterStatefulSet(m)
	}
	desired := mongo.Desired(m, domain)
	if len(desired) == 0 {
		t.Fatalf("no desired member for an accepted spec\n%s", sent)
	}
	cfg := mongo.InitialConfig(m.ReplSetName(), desired, m.Spec.ReplicaSet)
	yes := true
	o := actors.Observation{At: time.Now(), ObjectsReady: true, Replicas: m.Spec.Members, ArbiterReplicas: -1,
		Pods: map[string]actors.PodView{}, Members: map[string]actors.MemberView{}, Config: &cfg,
		AdminUser: &yes, OperatorUser: &yes}
	if m.Spec.Arbiters > 0 {
		o.ArbiterReplicas = m.Spec.Arbiters
	}
	st := &mongo.Status{Set: m.ReplSetName(), MyState: mongo.StatePrimary, Term: 1}
	primary := ""
	for i, dm := range desired {
		state := mongo.StateSecondary
		switch {
		case dm.Arbiter:
			state = mongo.StateArbiter
		case primary == "" && cfg.Member(dm.Host) != nil && cfg.Member(dm.Host).Priority > 0:
			state, primary = mongo.StatePrimary, dm.Host
		}
		o.Pods[dm.Name] = actors.PodView{Name: dm.Name, UID: dm.Name + "-uid", Phase: "Running", Ready: true, NodeReady: true}
		o.Members[dm.Host] = actors.MemberView{Name: dm.Name, Host: dm.Host, Answers: true, HasConfig: true, ConfigVersion: 1,
			State: state, Primary: dm.Host == primary}
		st.Members = append(st.Members, mongo.MemberStatus{ID: i, Name: dm.Host, Health: 1, State: state, StateStr: state.String(), ConfigVersion: 1})
	}
	o.Status, o.Primary, o.ConfigFrom = st, primary, desired[0].Host
	o.Budget, _, _ = actors.Budget(o, desired, true)
	s := actors.Initial()
	var did []string
	for range 12 {
		d := actors.Decide(s, actors.Inputs{Mgors: m, Desired: desired, Obs: o, Now: o.At})
		for _, e := range d.Events {
			s = actors.Evolve(s, s.Seq+1, o.At, e)
		}
		if d.Action == nil {
			continue
		}
		did = append(did, string(d.Action.Kind))
		if destructive[d.Action.Kind] {
			t.Fatalf("a destructive action %s on a healthy set (actions %v)\n%s", d.Action.Kind, did, sent)
		}
		s = actors.Evolve(s, s.Seq+1, o.At, actors.ActionFinished{Action: d.Action.Kind})
	}
	t.Logf("accepted: %d members; actions %v; phase %s", len(desired), did, s.Phase)
}
