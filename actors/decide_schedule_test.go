package actors

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// scheduledWorld is a Healthy 3-member cluster created a day before t0,
// whose spec.backup has the schedules given.
func scheduledWorld(t *testing.T, schedules ...v1alpha1.BackupSchedule) (*world, State) {
	t.Helper()
	w := newWorld(demo(3)).initiated().budgeted()
	s := healthyState(t, w)
	w.m.CreationTimestamp = metav1.NewTime(t0.Add(-24 * time.Hour))
	w.m.Spec.Backup = &v1alpha1.BackupSpec{Store: v1alpha1.BackupStore{Endpoint: "s3.backup.svc:9000", Bucket: "backups",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}, Schedules: schedules}
	w.obs.BackupsRead = true
	return w, s
}

func at(w *world, now time.Time) Inputs {
	in := w.in()
	in.Now = now
	return in
}

// A schedule's fire is recorded, then its MgorsBackup created; once the
// create is recorded finished nothing more happens until the next fire,
// and the same log replayed (a restart) takes the fire no second time.
func TestScheduleTakesEachFireOnce(t *testing.T) {
	w, s := scheduledWorld(t, v1alpha1.BackupSchedule{Name: "nightly", Schedule: "0 3 * * *", Keep: 2})
	now := t0.Add(-9*time.Hour + 30*time.Second) // 03:00:30
	d := Decide(s, at(w, now))
	if d.Action == nil || d.Action.Kind != ActCreateBackup || d.Action.Backup.Name != "demo-nightly-202611290300" ||
		d.Action.Backup.Schedule != "nightly" {
		t.Fatalf("want the 03:00 backup created: %v %+v", types(d), d.Action)
	}
	fired := d.Events[len(d.Events)-2].(BackupScheduled)
	if !fired.At.Equal(t0.Add(-9*time.Hour)) || fired.Backup != d.Action.Backup.Name {
		t.Fatalf("the record %+v must come before the create", fired)
	}
	s = run(s, d)
	if d = Decide(s, at(w, now)); d.Action != nil || has(d, "BackupScheduled") {
		t.Fatalf("in flight: %v", types(d))
	}
	s = run(s, Decision{Events: Conclude(*d0(t, s), nil)})
	if f := s.Schedules.Fires["nightly"]; !f.Created || f.Backup != "demo-nightly-202611290300" {
		t.Fatalf("fire %+v", f)
	}
	for _, later := range []time.Time{now.Add(time.Minute), t0, t0.Add(14*time.Hour + 59*time.Minute)} {
		if d = Decide(s, at(w, later)); d.Action != nil || has(d, "BackupScheduled") {
			t.Fatalf("%s: the fire taken again: %v", later, types(d))
		}
	}
	if d = Decide(s, at(w, t0.Add(15*time.Hour))); d.Action == nil || d.Action.Backup.Name != "demo-nightly-202611300300" {
		t.Fatalf("the next night: %v %+v", types(d), d.Action)
	}
}

// d0 is the action the state shows in flight, as the actor carried it out.
func d0(t *testing.T, s State) *Action {
	t.Helper()
	if s.InFlight == nil {
		t.Fatal("nothing in flight")
	}
	return &Action{Kind: s.InFlight.Action, Backup: &ScheduledBackup{Name: s.InFlight.Target}}
}

// Missed fires (the operator down for a day) take the newest one only; a
// new cluster counts from its creation; paused, nothing is taken; a fire
// whose backup exists (a re-created Mgors's log) is not taken again.
func TestScheduleMissedFiresAndLimits(t *testing.T) {
	w, s := scheduledWorld(t, v1alpha1.BackupSchedule{Name: "hourly", Schedule: "0 * * * *"})
	s.Schedules.Fires = map[string]ScheduleFire{"hourly": {At: t0.Add(-24 * time.Hour), Backup: "old", Created: true}}
	d := Decide(s, at(w, t0.Add(30*time.Minute)))
	if n := len(d.Events); d.Action == nil || d.Action.Backup.Name != "demo-hourly-202611291200" || !has(d, "BackupScheduled") || n > 3 {
		t.Fatalf("want only the 12:00 fire: %v %+v", types(d), d.Action)
	}

	fresh, fs := scheduledWorld(t, v1alpha1.BackupSchedule{Name: "hourly", Schedule: "0 * * * *"})
	fresh.m.CreationTimestamp = metav1.NewTime(t0.Add(10 * time.Minute))
	if d := Decide(fs, at(fresh, t0.Add(30*time.Minute))); d.Action != nil {
		t.Fatalf("a fire before the cluster existed: %+v", d.Action)
	}

	w.m.Spec.Paused = true
	if d := Decide(s, at(w, t0.Add(30*time.Minute))); d.Action != nil || has(d, "BackupScheduled") {
		t.Fatalf("paused: %v", types(d))
	}
	w.m.Spec.Paused = false
	w.obs.Backups = []*v1alpha1.MgorsBackup{scheduledBackup("demo-hourly-202611291200", "hourly", t0, "")}
	if d := Decide(s, at(w, t0.Add(30*time.Minute))); d.Action != nil {
		t.Fatalf("its backup exists: %+v", d.Action)
	}
}

// A create interrupted by a restart (the backup not there) fails, and is
// made again under the same name once scheduleRetry passed, without a new
// record; one whose backup is there is finished.
func TestScheduleCreateSettled(t *testing.T) {
	w, s := scheduledWorld(t, v1alpha1.BackupSchedule{Name: "hourly", Schedule: "0 * * * *"})
	now := t0.Add(time.Minute)
	s = run(s, Decide(s, at(w, now)))
	if s.InFlight == nil || s.InFlight.Action != ActCreateBackup {
		t.Fatalf("in flight: %+v", s.InFlight)
	}
	crashed := s
	d := Decide(crashed, at(w, now))
	if !has(d, "ActionFailed") {
		t.Fatalf("want the interrupted create failed: %v", types(d))
	}
	crashed = run(crashed, d)
	if d = Decide(crashed, at(w, now.Add(time.Minute))); d.Action != nil {
		t.Fatalf("retried before scheduleRetry: %+v", d.Action)
	}
	d = Decide(crashed, at(w, now.Add(scheduleRetry)))
	if d.Action == nil || d.Action.Backup.Name != "demo-hourly-202611291200" || has(d, "BackupScheduled") {
		t.Fatalf("want the same backup created again: %v %+v", types(d), d.Action)
	}

	w.obs.Backups = []*v1alpha1.MgorsBackup{scheduledBackup("demo-hourly-202611291200", "hourly", t0, "")}
	d = Decide(s, at(w, now))
	if !has(d, "ActionFinished") || d.Action != nil {
		t.Fatalf("want the create settled done: %v", types(d))
	}
	if s = run(s, d); !s.Schedules.Fires["hourly"].Created {
		t.Fatal("the create is not recorded done")
	}
}

func scheduledBackup(name, schedule string, created time.Time, phase v1alpha1.BackupPhase) *v1alpha1.MgorsBackup {
	b := backupOf(name, created)
	b.Labels = map[string]string{kube.LabelCluster: "demo", kube.LabelSchedule: schedule}
	b.Status.Phase = phase
	return b
}

// Beyond keep newest Succeeded backups of a schedule, the older Succeeded or
// Failed ones are pruned, oldest first, one at a time; never a running or
// pending one, another schedule's, or one without the schedule label.
func TestRetentionPrunesBeyondKeep(t *testing.T) {
	w, s := scheduledWorld(t, v1alpha1.BackupSchedule{Name: "hourly", Schedule: "0 * * * *", Keep: 2})
	s.Schedules.Fires = map[string]ScheduleFire{"hourly": {At: t0, Backup: "demo-hourly-202611291200", Created: true}}
	person := backupOf("by-hand", t0.Add(-10*time.Hour))
	person.Status.Phase = v1alpha1.BackupSucceeded
	w.obs.Backups = []*v1alpha1.MgorsBackup{
		person,
		scheduledBackup("h1", "hourly", t0.Add(-6*time.Hour), v1alpha1.BackupSucceeded),
		scheduledBackup("pending", "hourly", t0.Add(-5*time.Hour), v1alpha1.BackupPending),
		scheduledBackup("h2", "hourly", t0.Add(-4*time.Hour), v1alpha1.BackupFailed),
		scheduledBackup("other", "daily", t0.Add(-4*time.Hour), v1alpha1.BackupSucceeded),
		scheduledBackup("h3", "hourly", t0.Add(-3*time.Hour), v1alpha1.BackupSucceeded),
		scheduledBackup("h4", "hourly", t0.Add(-2*time.Hour), v1alpha1.BackupFailed),
		scheduledBackup("h5", "hourly", t0.Add(-1*time.Hour), v1alpha1.BackupSucceeded),
		scheduledBackup("h6", "hourly", t0, v1alpha1.BackupRunning),
	}
	now := t0.Add(time.Minute)
	var pruned []string
	for range 5 {
		d := Decide(s, at(w, now))
		if d.Action == nil {
			break
		}
		if d.Action.Kind != ActPruneBackup || d.Action.Backup.UID != "b-"+d.Action.Backup.Name {
			t.Fatalf("%+v", d.Action)
		}
		pruned = append(pruned, d.Action.Backup.Name)
		s = run(s, d)
		s = run(s, Decision{Events: append(Conclude(*d.Action, nil), BackupPruned{Schedule: "hourly", Backup: d.Action.Backup.Name, Objects: 3})})
		w.obs.Backups = without1(w.obs.Backups, d.Action.Backup.Name)
	}
	if strings.Join(pruned, ",") != "h1,h2" {
		t.Fatalf("pruned %v, want h1 then h2 (h3, h5 kept; h4 newer than the kept; pending, running, by hand, another schedule's never)", pruned)
	}
	// The prune that failed waits scheduleRetry, and so does the next create.
	w.obs.Backups = append([]*v1alpha1.MgorsBackup{scheduledBackup("h0", "hourly", t0.Add(-7*time.Hour), v1alpha1.BackupFailed)}, w.obs.Backups...)
	d := Decide(s, at(w, now))
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, errors.New("store: list: connection refused"))})
	if d := Decide(s, at(w, now.Add(time.Minute))); d.Action != nil {
		t.Fatalf("a failed prune retried at once: %+v", d.Action)
	}
	if d := Decide(s, at(w, now.Add(scheduleRetry+time.Second))); d.Action == nil || d.Action.Backup.Name != "h0" {
		t.Fatalf("want h0 again: %v", types(d))
	}
}

func without1(bs []*v1alpha1.MgorsBackup, name string) []*v1alpha1.MgorsBackup {
	var out []*v1alpha1.MgorsBackup
	for _, b := range bs {
		if b.Name != name {
			out = append(out, b)
		}
	}
	return out
}

// A prune interrupted by a restart is done once the backup is gone.
func TestPruneSettled(t *testing.T) {
	w, s := scheduledWorld(t, v1alpha1.BackupSchedule{Name: "hourly", Schedule: "0 * * * *", Keep: 1})
	s.Schedules.Fires = map[string]ScheduleFire{"hourly": {At: t0, Created: true}}
	w.obs.Backups = []*v1alpha1.MgorsBackup{scheduledBackup("h1", "hourly", t0.Add(-time.Hour), v1alpha1.BackupSucceeded),
		scheduledBackup("h2", "hourly", t0, v1alpha1.BackupSucceeded)}
	s = run(s, Decide(s, at(w, t0)))
	if s.InFlight == nil || s.InFlight.Action != ActPruneBackup || s.InFlight.UID != "b-h1" {
		t.Fatalf("%+v", s.InFlight)
	}
	w.obs.Backups = w.obs.Backups[1:]
	if d := Decide(s, at(w, t0)); !has(d, "ActionFinished") {
		t.Fatalf("want it settled done: %v", types(d))
	}
}

// An expression that does not parse is told once per generation, naming
// its field, and in status.backup.message; the other schedules run.
func TestInvalidScheduleToldOncePerGeneration(t *testing.T) {
	w, s := scheduledWorld(t, v1alpha1.BackupSchedule{Name: "bad", Schedule: "61 * * * *"},
		v1alpha1.BackupSchedule{Name: "hourly", Schedule: "0 * * * *"})
	d := Decide(s, at(w, t0.Add(time.Minute)))
	var invalid *ScheduleInvalid
	for _, e := range d.Events {
		if e, ok := e.(ScheduleInvalid); ok {
			invalid = &e
		}
	}
	want := `spec.backup.schedules[0].schedule "61 * * * *": `
	if invalid == nil || len(invalid.Errors) != 1 || !strings.HasPrefix(invalid.Errors[0], want) {
		t.Fatalf("want the bad one told: %v %+v", types(d), invalid)
	}
	if d.Action == nil || d.Action.Backup.Schedule != "hourly" {
		t.Fatalf("the other schedule must run: %+v", d.Action)
	}
	s = run(s, d)
	if d := Decide(s, at(w, t0.Add(time.Minute))); has(d, "ScheduleInvalid") {
		t.Fatal("told twice in one generation")
	}
	st := StatusFor(s, w.obs, w.m, "memory", "cluster.local")
	if st.Backup == nil || !strings.HasPrefix(st.Backup.Message, want) {
		t.Fatalf("status.backup %+v", st.Backup)
	}
	if _, _, warning, ok := Announcement(*invalid); !warning || !ok {
		t.Fatal("not told as a Warning")
	}
	w.m.Generation++
	s = run(s, Decision{Events: append(Conclude(*d.Action, nil), SpecObserved{Generation: w.m.Generation, Members: 3})})
	if d := Decide(s, at(w, t0.Add(time.Minute))); !has(d, "ScheduleInvalid") {
		t.Fatal("not told again in a new generation")
	}
}

// status.backup: nil without spec.backup and without a Succeeded backup;
// the newest Succeeded backup of any source and the point it restores to;
// the earliest next fire after the observation.
func TestBackupSummary(t *testing.T) {
	w := newWorld(demo(3))
	s := Initial()
	if st := BackupSummary(s, w.obs, w.m); st != nil {
		t.Fatalf("%+v", st)
	}
	byHand := backupOf("by-hand", t0.Add(-time.Hour))
	end := metav1.NewTime(t0.Add(-50 * time.Minute))
	byHand.Status = v1alpha1.MgorsBackupStatus{Phase: v1alpha1.BackupSucceeded, End: &v1alpha1.OplogPosition{Time: &end}}
	older := scheduledBackup("older", "hourly", t0.Add(-2*time.Hour), v1alpha1.BackupSucceeded)
	recorded := scheduledBackup("recorded", "hourly", t0.Add(-30*time.Minute), v1alpha1.BackupRunning)
	s.Backups = []BackupRun{{BackupStarted: BackupStarted{Backup: "recorded", UID: "b-recorded"},
		Completed: &BackupCompleted{End: backup.Position{Wall: t0.Add(-20 * time.Minute)}}}}
	w.obs.Backups = []*v1alpha1.MgorsBackup{older, byHand, recorded}
	st := BackupSummary(s, w.obs, w.m)
	if st == nil || st.LastBackup != "recorded" || !st.LastBackupTime.Time.Equal(t0.Add(-20*time.Minute)) || st.NextBackupTime != nil {
		t.Fatalf("%+v", st)
	}
	w.m.Spec.Backup = &v1alpha1.BackupSpec{Schedules: []v1alpha1.BackupSchedule{
		{Name: "daily", Schedule: "0 3 * * *"}, {Name: "hourly", Schedule: "15 * * * *"}}}
	if st = BackupSummary(s, w.obs, w.m); st.NextBackupTime == nil || !st.NextBackupTime.Time.Equal(t0.Add(15*time.Minute)) || st.Message != "" {
		t.Fatalf("%+v", st)
	}
}

// lastFire finds the newest fire in (after, now] of frequent and rare
// schedules alike.
func TestLastFire(t *testing.T) {
	tests := []struct {
		expr       string
		after, now time.Time
		want       time.Time
	}{
		{"* * * * *", time.Time{}, t0.Add(90 * time.Second), t0.Add(time.Minute)},
		{"* * * * *", t0.Add(time.Minute), t0.Add(90 * time.Second), time.Time{}},
		{"0 3 * * *", time.Time{}, t0, t0.Add(-9 * time.Hour)},
		{"0 3 * * *", t0.Add(-9 * time.Hour), t0, time.Time{}},
		{"0 0 1 1 *", time.Time{}, t0, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0 29 2 *", time.Time{}, t0, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"*/5 * * * *", t0.Add(-48 * time.Hour), t0.Add(7 * time.Minute), t0.Add(5 * time.Minute)},
	}
	for _, tt := range tests {
		sc, err := parseSchedule(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := lastFire(sc, tt.after, tt.now); !got.Equal(tt.want) {
			t.Errorf("%s after %s until %s: %s, want %s", tt.expr, tt.after, tt.now, got, tt.want)
		}
	}
}

// The actor looks again at the next fire within the interval, even on a
// quiet Healthy cluster; a moving cluster's sooner look wins; paused, none.
func TestLookAgainAtTheNextFire(t *testing.T) {
	m := demo(3)
	m.Spec.Backup = &v1alpha1.BackupSpec{Schedules: []v1alpha1.BackupSchedule{{Name: "hourly", Schedule: "0 * * * *"}}}
	healthy := State{Phase: v1alpha1.PhaseHealthy}
	recovering := State{Phase: v1alpha1.PhaseRecovering}
	now := t0.Add(59*time.Minute + 30*time.Second)
	if got := lookAgain(healthy, m, 0, time.Minute, now); got != 30*time.Second {
		t.Errorf("healthy: %v, want the fire in 30s", got)
	}
	if got := lookAgain(healthy, m, 0, time.Minute, t0.Add(time.Minute)); got != 0 {
		t.Errorf("a fire beyond the interval: %v, want the interval timer", got)
	}
	if got := lookAgain(recovering, m, 0, time.Minute, now); got != time.Second {
		t.Errorf("recovering: %v, want its own 1s", got)
	}
	if got := lookAgain(recovering, m, 5, time.Minute, now); got != slowest {
		t.Errorf("recovering, quiet: %v, want slowest", got)
	}
	if got := lookAgain(recovering, m, 5, time.Minute, t0.Add(59*time.Minute+55*time.Second)); got != 5*time.Second {
		t.Errorf("recovering, quiet, the fire sooner: %v", got)
	}
	m.Spec.Paused = true
	if got := lookAgain(healthy, m, 0, time.Minute, now); got != 0 {
		t.Errorf("paused: %v", got)
	}
}
