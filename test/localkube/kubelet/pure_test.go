package kubelet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "$(A)", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "x"},
		{"pre-$(A)-post", "pre-x-post"},
		{"$(B)", "$(A)"}, // no recursive expansion
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$x"},
		{"$A", "$A"},
		{"$", "$"},
		{"$(A", "$(A"},
		{"$(EMPTY)|", "|"},
		{"a$$b", "a$b"},
	} {
		if got := expand(tc.in, lookup); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type fakeObjects struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func (f fakeObjects) Secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, errors.New("not found")
}

func (f fakeObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	if c, ok := f.configMaps[name]; ok {
		return c, nil
	}
	return nil, errors.New("not found")
}

func TestContainerEnv(t *testing.T) {
	src := fakeObjects{
		secrets:    map[string]*corev1.Secret{"s": {Data: map[string][]byte{"pw": []byte("p"), "user": []byte("u")}}},
		configMaps: map[string]*corev1.ConfigMap{"c": {Data: map[string]string{"k": "v"}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: map[string]string{"b": "2", "a": "1"}},
		Status: corev1.PodStatus{PodIP: "10.244.1.2"}}
	secretRef := func(name, key string, optional bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
	}
	for _, tc := range []struct {
		name    string
		c       corev1.Container
		want    []envVar
		wantErr bool
	}{
		{name: "order and override", c: corev1.Container{
			EnvFrom: []corev1.EnvFromSource{{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}},
			Env:     []corev1.EnvVar{{Name: "PATH", Value: "/x:$(PATH)"}, {Name: "S_pw", Value: "over"}},
		}, want: []envVar{{"PATH", "/x:/bin"}, {"SVC", "1"}, {"S_pw", "over"}, {"S_user", "u"}}},
		{name: "downward", c: corev1.Container{Env: []corev1.EnvVar{
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "L", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
			{Name: "LA", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['a']"}}},
			{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		}}, want: []envVar{{"PATH", "/bin"}, {"SVC", "1"}, {"IP", "10.244.1.2"}, {"L", "a=\"1\"\nb=\"2\""}, {"LA", "1"}, {"NODE", "n1"}, {"HOST", "10.244.0.1"}}},
		{name: "resources", c: corev1.Container{
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1500m")}},
			Env: []corev1.EnvVar{
				{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			}}, want: []envVar{{"PATH", "/bin"}, {"SVC", "1"}, {"MEM", "1024"}, {"CPU", "2"}}},
		{name: "optional missing", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretRef("nope", "k", true)}}},
			want: []envVar{{"PATH", "/bin"}, {"SVC", "1"}}},
		{name: "required missing key", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretRef("s", "nope", false)}}},
			wantErr: true},
		{name: "configmap key", c: corev1.Container{Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}}}}},
			want: []envVar{{"PATH", "/bin"}, {"SVC", "1"}, {"K", "v"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := containerEnv(pod, &tc.c, []envVar{{"PATH", "/bin"}}, []envVar{{"SVC", "1"}}, src, "n1", "10.244.0.1")
			var ce *configError
			if tc.wantErr {
				if !errors.As(err, &ce) {
					t.Fatalf("err %v, want a configError", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	img := &Image{Entrypoint: []string{"/entry"}, Cmd: []string{"default"}}
	env := []envVar{{"X", "1"}}
	for _, tc := range []struct {
		name string
		c    corev1.Container
		img  *Image
		want []string
	}{
		{"image only", corev1.Container{}, img, []string{"/entry", "default"}},
		{"args replace cmd", corev1.Container{Args: []string{"a$(X)"}}, img, []string{"/entry", "a1"}},
		{"command drops cmd", corev1.Container{Command: []string{"/c"}}, img, []string{"/c"}},
		{"command and args", corev1.Container{Command: []string{"/c"}, Args: []string{"$(Y)"}}, img, []string{"/c", "$(Y)"}},
		{"no image", corev1.Container{Command: []string{"sh"}}, nil, []string{"sh"}},
	} {
		if got := commandLine(&tc.c, tc.img, env); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func term(code int32, finished time.Time) *termination {
	reason := "Error"
	if code == 0 {
		reason = "Completed"
	}
	return &termination{ExitCode: code, Reason: reason, FinishedAt: finished}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	spec := func(policy corev1.RestartPolicy, inits ...string) *corev1.PodSpec {
		s := &corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{{Name: "app"}}}
		for _, n := range inits {
			s.InitContainers = append(s.InitContainers, corev1.Container{Name: n})
		}
		return s
	}
	// entry is a back-off entry of delay d whose last restart was let through at
	// the given time.
	entry := func(d time.Duration, updated time.Time) restartBackoff {
		return restartBackoff{Delay: d, Updated: updated}
	}
	for _, tc := range []struct {
		name      string
		spec      *corev1.PodSpec
		obs       map[string]*observed
		wantStart []string
		wantWake  time.Time
		wantHeld  map[string]time.Duration
	}{
		{"fresh pod starts app", spec(corev1.RestartPolicyAlways), nil, []string{"app"}, time.Time{}, nil},
		{"first init first", spec(corev1.RestartPolicyAlways, "i1", "i2"), nil, []string{"i1"}, time.Time{}, nil},
		{"waits for running init", spec(corev1.RestartPolicyAlways, "i1", "i2"),
			map[string]*observed{"i1": {Running: true}}, nil, time.Time{}, nil},
		{"next init after success", spec(corev1.RestartPolicyAlways, "i1", "i2"),
			map[string]*observed{"i1": {Current: term(0, now)}}, []string{"i2"}, time.Time{}, nil},
		{"app after all inits", spec(corev1.RestartPolicyAlways, "i1"),
			map[string]*observed{"i1": {Current: term(0, now)}}, []string{"app"}, time.Time{}, nil},
		{"first init failure retried at once", spec(corev1.RestartPolicyAlways, "i1"),
			map[string]*observed{"i1": {Current: term(1, now)}}, []string{"i1"}, time.Time{}, nil},
		{"failed init backs off", spec(corev1.RestartPolicyAlways, "i1"),
			map[string]*observed{"i1": {RestartCount: 1, Current: term(1, now), Backoff: entry(10*time.Second, now.Add(-time.Second))}},
			nil, now.Add(10 * time.Second), map[string]time.Duration{"i1": 10 * time.Second}},
		{"failed init retried after back-off", spec(corev1.RestartPolicyOnFailure, "i1"),
			map[string]*observed{"i1": {Current: term(1, now.Add(-11*time.Second)), Backoff: entry(10*time.Second, now.Add(-12*time.Second))}},
			[]string{"i1"}, time.Time{}, nil},
		{"failed init under Never stops", spec(corev1.RestartPolicyNever, "i1"),
			map[string]*observed{"i1": {Current: term(1, now.Add(-time.Hour))}}, nil, time.Time{}, nil},
		{"running app untouched", spec(corev1.RestartPolicyAlways), map[string]*observed{"app": {Running: true}}, nil, time.Time{}, nil},
		{"first exit restarts at once", spec(corev1.RestartPolicyAlways),
			map[string]*observed{"app": {Current: term(1, now)}}, []string{"app"}, time.Time{}, nil},
		{"always restarts success after back-off", spec(corev1.RestartPolicyAlways),
			map[string]*observed{"app": {Current: term(0, now.Add(-10*time.Second)), Backoff: entry(10*time.Second, now.Add(-15*time.Second))}},
			[]string{"app"}, time.Time{}, nil},
		{"second exit waits the entry's delay", spec(corev1.RestartPolicyAlways),
			map[string]*observed{"app": {RestartCount: 1, Current: term(1, now.Add(-3*time.Second)), Backoff: entry(10*time.Second, now.Add(-5*time.Second))}},
			nil, now.Add(7 * time.Second), map[string]time.Duration{"app": 10 * time.Second}},
		{"back-off doubled", spec(corev1.RestartPolicyAlways),
			map[string]*observed{"app": {RestartCount: 3, Current: term(1, now.Add(-30*time.Second)), Backoff: entry(40*time.Second, now.Add(-31*time.Second))}},
			nil, now.Add(10 * time.Second), map[string]time.Duration{"app": 40 * time.Second}},
		{"ran over 10 min: at once again", spec(corev1.RestartPolicyAlways),
			map[string]*observed{"app": {RestartCount: 7, Current: term(1, now), Backoff: entry(5*time.Minute, now.Add(-10*time.Minute-time.Second))}},
			[]string{"app"}, time.Time{}, nil},
		{"onFailure keeps success", spec(corev1.RestartPolicyOnFailure),
			map[string]*observed{"app": {Current: term(0, now.Add(-time.Hour))}}, nil, time.Time{}, nil},
		{"onFailure restarts failure", spec(corev1.RestartPolicyOnFailure),
			map[string]*observed{"app": {Current: term(2, now.Add(-time.Hour))}}, []string{"app"}, time.Time{}, nil},
		{"never restarts nothing", spec(corev1.RestartPolicyNever),
			map[string]*observed{"app": {Current: term(2, now.Add(-time.Hour))}}, nil, time.Time{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := tc.obs
			if obs == nil {
				obs = map[string]*observed{}
			}
			p := decide(tc.spec, obs, now)
			if !reflect.DeepEqual(p.Start, tc.wantStart) || !p.Wake.Equal(tc.wantWake) || !reflect.DeepEqual(p.BackOff, tc.wantHeld) {
				t.Fatalf("plan %+v, want start %v wake %v back-off %v", p, tc.wantStart, tc.wantWake, tc.wantHeld)
			}
		})
	}
}

// A container that crashes every 2 s is restarted as a kubelet restarts it: at once,
// then after 10 s, 20 s, 40 s … capped at 5 min; a run of over 10 min starts the
// sequence over.
func TestCrashLoopBackOffSequence(t *testing.T) {
	pol := newBackoffPolicy(0, 0)
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{Name: "app"}}}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	o := &observed{}
	// run lets the container run for d from start, then has decide find when it
	// starts again; it returns the wait after the exit and the next start.
	run := func(start time.Time, d time.Duration) (time.Duration, time.Time) {
		finished := start.Add(d)
		o.Running, o.Current = false, &termination{ExitCode: 1, FinishedAt: finished}
		now := finished
		for i := 0; i < 1000; i++ {
			p := decide(spec, map[string]*observed{"app": o}, now)
			if len(p.Start) == 1 {
				o.Backoff = pol.next(o.Backoff, finished, now)
				o.Running, o.Current = true, nil
				return now.Sub(finished), now
			}
			if p.BackOff["app"] != o.Backoff.Delay || p.Wake.IsZero() {
				t.Fatalf("held %v wake %v: want the entry's delay %v and a wake time", p.BackOff, p.Wake, o.Backoff.Delay)
			}
			now = p.Wake
		}
		t.Fatal("never restarted")
		return 0, time.Time{}
	}
	start := t0
	var waits []time.Duration
	for i := 0; i < 9; i++ {
		var w time.Duration
		w, start = run(start, 2*time.Second)
		waits = append(waits, w)
	}
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	if !reflect.DeepEqual(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	// The entry is garbage-collected 600 s after the restart it let through: after
	// a run of 9 min the 5 min wait ends at that point, and the sequence starts over.
	w, start := run(start, 9*time.Minute)
	if w != time.Minute+time.Second {
		t.Fatalf("after a 9 min run: wait %v, want 1m1s (the entry is collected 10 min after the restart)", w)
	}
	if w, start = run(start, 2*time.Second); w != 10*time.Second {
		t.Fatalf("the exit after that waits %v, want the initial 10s", w)
	}
	if w, start = run(start, 10*time.Minute+time.Second); w != 0 {
		t.Fatalf("after a run over 10 min: wait %v, want an immediate restart", w)
	}
	if w, _ = run(start, time.Second); w != 10*time.Second {
		t.Fatalf("the exit after that waits %v, want the initial 10s", w)
	}
}

func TestBackoffPolicy(t *testing.T) {
	for _, tc := range []struct {
		initial, max time.Duration
		want         backoffPolicy
	}{
		{0, 0, backoffPolicy{10 * time.Second, 5 * time.Minute}},
		{time.Second, 0, backoffPolicy{time.Second, 5 * time.Minute}},
		{10 * time.Second, 5 * time.Second, backoffPolicy{5 * time.Second, 5 * time.Second}},
	} {
		if got := newBackoffPolicy(tc.initial, tc.max); got != tc.want {
			t.Errorf("newBackoffPolicy(%v, %v) = %+v, want %+v", tc.initial, tc.max, got, tc.want)
		}
	}
	// An entry whose run began long ago is garbage-collected 600 s after its last
	// update: a container waiting in back-off is let through then.
	upd := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b := restartBackoff{Delay: 5 * time.Minute, Updated: upd}
	finished := upd.Add(9 * time.Minute)
	if got, want := b.restartAt(finished), upd.Add(10*time.Minute+time.Second); !got.Equal(want) {
		t.Fatalf("restartAt %v, want %v (the GC removes the entry)", got, want)
	}
	if got := (backoffPolicy{10 * time.Second, 5 * time.Minute}).next(b, finished, upd.Add(10*time.Minute+time.Second)); got.Delay != 10*time.Second {
		t.Fatalf("next after GC %+v, want the initial delay", got)
	}
}

func TestComputeStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	image := func(ref string) (string, string) { return normalizeReference(ref), "id" }
	pod := func(policy corev1.RestartPolicy, inits ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{{Name: "app", Image: "mongo"}}}}
		for _, n := range inits {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
		}
		return p
	}
	cond := func(st corev1.PodStatus, ty corev1.PodConditionType) corev1.ConditionStatus {
		for _, c := range st.Conditions {
			if c.Type == ty {
				return c.Status
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		obs       map[string]*observed
		phase     corev1.PodPhase
		ready     corev1.ConditionStatus
		init      corev1.ConditionStatus
		appReason string // waiting reason, or "running" / "terminated"
	}{
		{"nothing yet", pod(corev1.RestartPolicyAlways), nil, corev1.PodPending, corev1.ConditionFalse, corev1.ConditionTrue, "ContainerCreating"},
		{"init running", pod(corev1.RestartPolicyAlways, "i"), map[string]*observed{"i": {Running: true}},
			corev1.PodPending, corev1.ConditionFalse, corev1.ConditionFalse, "PodInitializing"},
		{"running ready", pod(corev1.RestartPolicyAlways), map[string]*observed{"app": {Running: true, Ready: true, Started: true}},
			corev1.PodRunning, corev1.ConditionTrue, corev1.ConditionTrue, "running"},
		{"running unready", pod(corev1.RestartPolicyAlways), map[string]*observed{"app": {Running: true}},
			corev1.PodRunning, corev1.ConditionFalse, corev1.ConditionTrue, "running"},
		{"crash loop stays Running", pod(corev1.RestartPolicyAlways), map[string]*observed{"app": {Current: term(1, now), WaitReason: "CrashLoopBackOff"}},
			corev1.PodRunning, corev1.ConditionFalse, corev1.ConditionTrue, "CrashLoopBackOff"},
		{"succeeded", pod(corev1.RestartPolicyNever), map[string]*observed{"app": {Current: term(0, now)}},
			corev1.PodSucceeded, corev1.ConditionFalse, corev1.ConditionTrue, "terminated"},
		{"failed", pod(corev1.RestartPolicyNever), map[string]*observed{"app": {Current: term(1, now)}},
			corev1.PodFailed, corev1.ConditionFalse, corev1.ConditionTrue, "terminated"},
		{"failed init under Never", pod(corev1.RestartPolicyNever, "i"), map[string]*observed{"i": {Current: term(1, now)}},
			corev1.PodFailed, corev1.ConditionFalse, corev1.ConditionFalse, "PodInitializing"},
		{"config error", pod(corev1.RestartPolicyAlways), map[string]*observed{"app": {WaitReason: "CreateContainerConfigError"}},
			corev1.PodPending, corev1.ConditionFalse, corev1.ConditionTrue, "CreateContainerConfigError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := tc.obs
			if obs == nil {
				obs = map[string]*observed{}
			}
			st := computeStatus(statusInput{Pod: tc.pod, Obs: obs, PodIP: "10.244.1.5", HostIP: "10.244.0.1", StartTime: now, SandboxReady: true, Now: now, Image: image})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			if got := cond(st, corev1.PodReady); got != tc.ready {
				t.Errorf("Ready %s, want %s", got, tc.ready)
			}
			if got := cond(st, corev1.PodInitialized); got != tc.init {
				t.Errorf("Initialized %s, want %s", got, tc.init)
			}
			app := st.ContainerStatuses[0]
			var reason string
			switch {
			case app.State.Running != nil:
				reason = "running"
			case app.State.Terminated != nil:
				reason = "terminated"
			case app.State.Waiting != nil:
				reason = app.State.Waiting.Reason
			}
			if reason != tc.appReason {
				t.Errorf("app state %s, want %s", reason, tc.appReason)
			}
			if app.Image != "docker.io/library/mongo:latest" || st.PodIP != "10.244.1.5" || len(st.PodIPs) != 1 {
				t.Errorf("image %q podIP %q podIPs %v", app.Image, st.PodIP, st.PodIPs)
			}
		})
	}
}

func TestConditionTransitionTimeKept(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: then}}}}
	st := computeStatus(statusInput{Pod: p, Obs: map[string]*observed{"app": {Running: true, Ready: true, Started: true}},
		Now: time.Now(), Image: func(string) (string, string) { return "", "" }})
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady && !c.LastTransitionTime.Equal(&then) {
			t.Fatalf("Ready transition time %v, want the previous %v", c.LastTransitionTime, then)
		}
	}
}

func TestRenderHostsAndResolvConf(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "prod"}}
	wantBase := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	if got := renderHosts(p, "10.244.1.2", "cluster.local"); got != wantBase+"10.244.1.2\tdb-0\n" {
		t.Errorf("hosts without subdomain:\n%s", got)
	}
	p.Spec.Subdomain = "db"
	p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"a", "b"}}}
	want := wantBase + "10.244.1.2\tdb-0.db.prod.svc.cluster.local\tdb-0\n\n# Entries added by HostAliases.\n10.0.0.9\ta\tb\n"
	if got := renderHosts(p, "10.244.1.2", "cluster.local"); got != want {
		t.Errorf("hosts with subdomain:\n%q\nwant\n%q", got, want)
	}

	host := "nameserver 10.255.255.53\nsearch example.org\noptions edns0\n"
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Pod)
		want string
	}{
		{"cluster first", func(*corev1.Pod) {}, "search prod.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{"default", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault }, "search example.org\nnameserver 10.255.255.53\noptions edns0\n"},
		{"host network falls back", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "search example.org\nnameserver 10.255.255.53\noptions edns0\n"},
		{"none with config", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Searches: []string{"x"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}}
		}, "search x\nnameserver 1.2.3.4\noptions ndots:2\n"},
		{"option replaced", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}}
		}, "search prod.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:1\n"},
	} {
		q := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "prod"}}
		tc.mod(q)
		if got := renderResolvConf(q, "10.96.0.10", "cluster.local", host); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestImageTable(t *testing.T) {
	table, err := loadImageTable("")
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{
		"mongo": "mongo", "mongo:7.0": "mongo", "docker.io/library/mongo:7.0.14": "mongo",
		"mongo@sha256:0123": "mongo", "index.docker.io/library/mongo": "mongo",
		"mongodb/mongodb-community-server:7.0-ubuntu2204": "mongo", "percona/percona-server-mongodb:7.0": "mongo",
		"ghcr.io/mgors/operator:dev": "operator", "debian:12": "", "localhost:5000/mongo": "",
		"mgors/s3:dev": "s3", "ghcr.io/mgors/s3": "s3",
	} {
		img := table.Lookup(ref)
		got := ""
		if img != nil {
			got = img.Name
		}
		if got != want {
			t.Errorf("Lookup(%q) = %q, want %q", ref, got, want)
		}
	}
	if m := table.Lookup("mongo"); m.User != "999" || len(m.Cmd) != 1 || m.Cmd[0] != "mongod" {
		t.Errorf("mongo image config %+v", m)
	}
	if s := table.Lookup("mgors/s3"); s.Dir != "s3" || len(s.Entrypoint) != 1 || s.Entrypoint[0] != "/usr/local/bin/mgors-s3" {
		t.Errorf("s3 image config %+v", s)
	}
	extra := filepath.Join(t.TempDir(), "images.yaml")
	if err := os.WriteFile(extra, []byte("images:\n- name: mine\n  repositories: [mongo]\n  dir: /opt/mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	table, err = loadImageTable(extra)
	if err != nil {
		t.Fatal(err)
	}
	if got := table.Lookup("mongo:6"); got == nil || got.Name != "mine" {
		t.Errorf("a user table entry must override the built-in one, got %+v", got)
	}
	for ref, want := range map[string]string{"mongo": "docker.io/library/mongo:latest", "a/b:1": "docker.io/a/b:1", "quay.io/x/y@sha256:ab": "quay.io/x/y@sha256:ab"} {
		if got := normalizeReference(ref); got != want {
			t.Errorf("normalizeReference(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestIPAM(t *testing.T) {
	dir := t.TempDir()
	a, err := newIPAM(dir, "10.244.0.0/30", "10.244.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ip1, err := a.Lease("pod-1")
	if err != nil || ip1.String() != "10.244.0.2" {
		t.Fatalf("first lease %v %v, want 10.244.0.2 (not the gateway .1)", ip1, err)
	}
	if again, _ := a.Lease("pod-1"); again != ip1 {
		t.Fatalf("a second lease for the same pod gave %v", again)
	}
	if _, err := a.Lease("pod-2"); err == nil {
		t.Fatal("a /30 with a gateway has one address for pods")
	}
	// A new allocator on the same directory (a kubelet restart) sees the lease.
	b, _ := newIPAM(dir, "10.244.0.0/30", "10.244.0.1")
	if ip, ok := b.Lookup("pod-1"); !ok || ip != ip1 {
		t.Fatalf("lease lost across restart: %v %v", ip, ok)
	}
	b.Release("pod-1")
	if ip, err := b.Lease("pod-2"); err != nil || ip != ip1 {
		t.Fatalf("released address not reused: %v %v", ip, err)
	}

	// Round-robin: an address freed is handed out again only after the others.
	c, _ := newIPAM(t.TempDir(), "10.244.0.0/29", "10.244.0.1")
	var got []string
	for _, uid := range []string{"a", "b", "c"} {
		ip, err := c.Lease(uid)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip.String())
	}
	c.Release("a")
	c.Release("b")
	for _, uid := range []string{"d", "e", "f"} {
		ip, err := c.Lease(uid)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip.String())
	}
	if want := "10.244.0.2 10.244.0.3 10.244.0.4 10.244.0.5 10.244.0.6 10.244.0.2"; strings.Join(got, " ") != want {
		t.Fatalf("leases %s, want %s", strings.Join(got, " "), want)
	}
}

func TestLogRenderingAndRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l, err := openLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l.max = 200
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		if err := l.write("stdout", false, []byte(fmt.Sprintf("line %d", i)), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.write("stderr", true, []byte("part-"), t0.Add(20*time.Second))
	_ = l.write("stderr", false, []byte("end"), t0.Add(21*time.Second))
	_ = l.Close()
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Fatalf("no rotation at 200 bytes: %v", err)
	}
	lines := readLogFiles(path)
	all := string(renderLog(lines, logOptions{TailLines: -1}))
	if !strings.HasSuffix(all, "line 9\npart-end\n") {
		t.Fatalf("rendered log %q", all)
	}
	if got := string(renderLog(lines, logOptions{TailLines: 2})); got != "line 9\npart-end\n" {
		t.Fatalf("tail 2: %q", got)
	}
	if got := string(renderLog(lines, logOptions{TailLines: 1, Timestamps: true})); got != "2026-01-01T00:00:20Z part-end\n" {
		t.Fatalf("timestamps: %q", got)
	}
	if got := string(renderLog(lines, logOptions{TailLines: -1, Since: t0.Add(9 * time.Second)})); got != "line 9\npart-end\n" {
		t.Fatalf("since: %q", got)
	}
	if got := string(renderLog(lines, logOptions{TailLines: 1, LimitBytes: 4})); got != "part" {
		t.Fatalf("limitBytes: %q", got)
	}
}

func TestResolveIn(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "run"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "var"), 0o755))
	must(os.Symlink("/run", filepath.Join(root, "var/run")))
	must(os.Symlink("../../../../etc", filepath.Join(root, "var/escape")))
	must(os.Symlink("/elsewhere", filepath.Join(root, "link")))
	for in, want := range map[string]string{
		"/var/run/secrets/token": "/run/secrets/token",
		"/var/escape/passwd":     "/etc/passwd",
		"/link":                  "/link", // the last component is not followed
		"/a/../b":                "/b",
	} {
		if got := resolveIn(root, in); got != filepath.Join(root, want) {
			t.Errorf("resolveIn(%q) = %q, want root%s", in, got, want)
		}
	}
}

func TestResolveIdentity(t *testing.T) {
	mongo := &Image{User: "999", Group: "999"}
	for _, tc := range []struct {
		name    string
		psc     *corev1.PodSecurityContext
		csc     *corev1.SecurityContext
		img     *Image
		want    identity
		wantErr bool
	}{
		{"host root", nil, nil, nil, identity{}, false},
		{"image user", nil, nil, mongo, identity{UID: 999, GID: 999}, false},
		{"pod user wins", &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(5))}, nil, mongo, identity{UID: 5}, false},
		{"container over pod", &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(5)), FSGroup: ptr.To(int64(7))},
			&corev1.SecurityContext{RunAsUser: ptr.To(int64(6)), RunAsGroup: ptr.To(int64(8)), ReadOnlyRootFilesystem: ptr.To(true)},
			nil, identity{UID: 6, GID: 8, Groups: []uint32{7}, ReadOnlyRoot: true}, false},
		{"nonRoot with image user", &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, nil, mongo, identity{UID: 999, GID: 999}, false},
		{"nonRoot refuses root", &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, nil, nil, identity{}, true},
		{"nonRoot refuses explicit 0", nil, &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(0))}, mongo, identity{}, true},
		{"nonRoot refuses named user", &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, nil, &Image{User: "mongodb"}, identity{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.psc}}
			got, err := resolveIdentity(pod, &corev1.Container{SecurityContext: tc.csc}, tc.img)
			var ce *configError
			if tc.wantErr != errors.As(err, &ce) {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("identity %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestProbeCounter(t *testing.T) {
	c := &probeCounter{success: 2, failure: 3}
	verdict := false
	for i, step := range []struct {
		ok   bool
		want bool
	}{{true, false}, {true, true}, {false, true}, {false, true}, {false, false}, {true, false}, {true, true}} {
		verdict = c.observe(step.ok, verdict)
		if verdict != step.want {
			t.Fatalf("step %d: verdict %v, want %v", i, verdict, step.want)
		}
	}
}

func TestKeyFilesAndModes(t *testing.T) {
	data := map[string][]byte{"a": []byte("1"), "b": []byte("2")}
	files, err := keyFiles(data, nil, 0o600, false, "x")
	if err != nil || len(files) != 2 || files[0].Path != "a" || files[0].Mode != 0o600 {
		t.Fatalf("all keys: %+v %v", files, err)
	}
	files, err = keyFiles(data, []corev1.KeyToPath{{Key: "b", Path: "dir/b.txt", Mode: ptr.To(int32(0o444))}}, 0o600, false, "x")
	if err != nil || len(files) != 1 || files[0].Path != "dir/b.txt" || files[0].Mode != 0o444 {
		t.Fatalf("items: %+v %v", files, err)
	}
	if _, err := keyFiles(data, []corev1.KeyToPath{{Key: "zz", Path: "z"}}, 0o600, false, "x"); err == nil {
		t.Fatal("a missing key of a required source must fail")
	}
	dir := t.TempDir()
	if err := writeVolumeFiles(dir, []volumeFile{{"sub/f", []byte("x"), 0o400}}, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "sub/f")); err != nil || st.Mode().Perm() != 0o400 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
}

func TestServiceLinkEnv(t *testing.T) {
	svcs := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-db"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.7",
			Ports: []corev1.ServicePort{{Name: "mongo-port", Port: 27017, Protocol: corev1.ProtocolTCP}, {Port: 9216}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "headless"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Port: 1}}}},
	}
	want := []envVar{
		{"WEB_DB_SERVICE_HOST", "10.96.0.7"}, {"WEB_DB_SERVICE_PORT", "27017"}, {"WEB_DB_SERVICE_PORT_MONGO_PORT", "27017"},
		{"WEB_DB_PORT", "tcp://10.96.0.7:27017"},
		{"WEB_DB_PORT_27017_TCP", "tcp://10.96.0.7:27017"}, {"WEB_DB_PORT_27017_TCP_PROTO", "tcp"},
		{"WEB_DB_PORT_27017_TCP_PORT", "27017"}, {"WEB_DB_PORT_27017_TCP_ADDR", "10.96.0.7"},
		{"WEB_DB_PORT_9216_TCP", "tcp://10.96.0.7:9216"}, {"WEB_DB_PORT_9216_TCP_PROTO", "tcp"},
		{"WEB_DB_PORT_9216_TCP_PORT", "9216"}, {"WEB_DB_PORT_9216_TCP_ADDR", "10.96.0.7"},
	}
	if got := serviceLinkEnv(svcs); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestDecideSidecars(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	always := corev1.ContainerRestartPolicyAlways
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "side", RestartPolicy: &always}, {Name: "setup"}},
		Containers:     []corev1.Container{{Name: "app"}}}
	for _, tc := range []struct {
		name  string
		obs   map[string]*observed
		start []string
		init  bool
	}{
		{"sidecar first", map[string]*observed{}, []string{"side"}, false},
		{"waits for the sidecar to start", map[string]*observed{"side": {Running: true}}, nil, false},
		{"next init once started", map[string]*observed{"side": {Running: true, Started: true}}, []string{"setup"}, false},
		{"app after inits", map[string]*observed{"side": {Running: true, Started: true}, "setup": {Current: term(0, now)}}, []string{"app"}, true},
		{"dead sidecar restarted beside the app despite Never", map[string]*observed{
			"side": {Current: term(1, now.Add(-time.Minute))}, "setup": {Current: term(0, now)}, "app": {Running: true}}, []string{"side"}, true},
		{"no restart once the app finished", map[string]*observed{
			"side": {Current: term(1, now.Add(-time.Minute))}, "setup": {Current: term(0, now)}, "app": {Current: term(0, now)}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decide(spec, tc.obs, now)
			if !reflect.DeepEqual(p.Start, tc.start) {
				t.Fatalf("start %v, want %v", p.Start, tc.start)
			}
			if got := initDone(spec, tc.obs); got != tc.init {
				t.Fatalf("initDone %v, want %v", got, tc.init)
			}
		})
	}
	// Status: a running sidecar's readiness counts; the pod succeeds on its app alone.
	pod := &corev1.Pod{Spec: *spec}
	img := func(string) (string, string) { return "", "" }
	st := computeStatus(statusInput{Pod: pod, Now: now, Image: img, Obs: map[string]*observed{
		"side": {Running: true, Started: true, Ready: false}, "setup": {Current: term(0, now)}, "app": {Running: true, Ready: true, Started: true}}})
	for _, c := range st.Conditions {
		if c.Type == corev1.ContainersReady && (c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "side")) {
			t.Fatalf("ContainersReady %+v: an unready sidecar keeps the pod unready", c)
		}
		if c.Type == corev1.PodInitialized && c.Status != corev1.ConditionTrue {
			t.Fatalf("Initialized %+v", c)
		}
	}
	st = computeStatus(statusInput{Pod: pod, Now: now, Image: img, Obs: map[string]*observed{
		"side": {Current: term(137, now)}, "setup": {Current: term(0, now)}, "app": {Current: term(0, now)}}})
	if st.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded when the app container succeeded", st.Phase)
	}
}
