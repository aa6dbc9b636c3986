package actors

import (
	"fmt"
	"strings"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
)

// Action is one thing a Cluster actor does to the world, carried out only after
// the events that decided it (ending with its ActionStarted) are durable.
type Action struct {
	Kind ActionKind
	// Host is the member the action is sent to.
	Host string
	// Config is the config an initiate or reconfig installs.
	Config *mongo.Config
	// Replicas is the size a scale action sets.
	Replicas int32
	// UID is the pod a FencePod deletes.
	UID string
	// Backup is the MgorsBackup a CreateBackup makes or a PruneBackup
	// deletes (decide_schedule.go).
	Backup *ScheduledBackup
	// MinAvailable is the PodDisruptionBudget a SetDisruptionBudget sets.
	MinAvailable int32
	// Auth is how the World authenticates to the members for this action:
	// the state's at the time of the decision.
	Auth Auth
	// Credential is the user and Secret a user action works on; the action
	// fails when the Secret is no longer at its SecretVersion.
	Credential Credential
	// Ordinals are the members whose data claims an ExpandVolumes grows to
	// Size (decide_storage.go).
	Ordinals []int32
	Size     string
	// Parameters and OplogSizeMB are what an ApplyConfig sets on Host
	// (decide_config.go): runtime parameters by name, and the oplog's size
	// (0: leave it).
	Parameters  map[string]string
	OplogSizeMB int64
	// Step, From and To are the keyfile rotation step a RotateKeyfile
	// writes and the fingerprints of the old and new keys (To "" at step 1).
	Step     int
	From, To string
	// Through is where a PruneArchive deletes the archive's chunks through.
	Through backup.Position
}

// Decision is what Decide returns: events to persist, in order, and at most one
// action to carry out once they are.
type Decision struct {
	Events []Event
	Action *Action
}

// Inputs is everything Decide looks at besides the state.
type Inputs struct {
	// Mgors is the object as last seen (spec, generation).
	Mgors *v1alpha1.Mgors
	// Desired are the members the spec asks for (mongo.Desired).
	Desired []mongo.DesiredMember
	// Obs is the latest observation.
	Obs Observation
	// Now is the decision's clock, for back-off and grace periods.
	Now time.Time
	// Results are the results of the dumps and restores that ended in this
	// process and are not recorded yet (BackupCompleted, BackupFailed,
	// RestoreCompleted, RestoreFailed), by their object's UID.
	Results map[string]Event
}

// backoff is how long the actor waits before retrying an action that failed n
// times in a row: 2s, 4s, 8s, ... up to two minutes.
func backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := 2 * time.Second << min(n-1, 6)
	return min(d, 2*time.Minute)
}

// decider builds a Decision while folding its own events into a copy of the
// state, so later rules see what earlier rules decided.
type decider struct {
	s   State
	in  Inputs
	out Decision
}

func (d *decider) emit(e Event) {
	d.out.Events = append(d.out.Events, e)
	d.s = Evolve(d.s, d.s.Seq+1, d.in.Now, e)
}

func (d *decider) act(a Action, started ActionStarted) {
	started.Action = a.Kind
	a.Auth = d.s.Auth
	d.emit(started)
	d.out.Action = &a
}

func (d *decider) phase(to v1alpha1.Phase, reason string) {
	if d.s.Phase != to {
		d.emit(PhaseChanged{From: d.s.Phase, To: to, Reason: reason})
	}
}

// Decide is the Cluster actor's brain: given its state and the world, what
// happened (events) and what to do next (at most one action). It is pure.
//
// The rules, in order:
//  1. A spec generation not seen before is recorded.
//  2. An action the log shows in flight (its result lost in a crash) is
//     settled from the world: its effect observed → finished, else failed.
//  3. What changed in the world is recorded (members, problems, majority,
//     a member resyncing or stuck: decide_stuck.go); where the world
//     contradicts the log the world wins, with an event saying so.
//  4. Paused: nothing more; nor while an action is in flight or the last
//     failure's back-off runs. A new spec.version is accepted or refused
//     against the FCV (decide_upgrade.go); a new spec.tls mode starts its
//     next step (decide_tls.go), ended in Recovering once the roll is over.
//  5. A person's approval annotation is acted on or refused, recorded, then
//     removed; member pods of a node NotReady past nodeLossGracePeriod are
//     force-deleted (decide_recovery.go); the operator's own user is created
//     and switched to, and a Secret's password that does not open its user
//     is applied (decide_users.go). Before rule 2, a login refused to the
//     operator's own user discards the observation and switches back to
//     the keyfile.
//  6. The phase's own rule decides the next action, after the objects and
//     the PodDisruptionBudget (decide_budget.go): Recovering wipes a
//     diverged member, then a stuck one, before it plans the membership, and
//     deletes a leftover arbiters' StatefulSet once the arbiter left the
//     config (decide_arbiter.go). Before the phase's rule, a grown
//     spec.storage.size expands the claims and replaces the StatefulSet
//     (decide_storage.go). After the rolling restart, the runtime options
//     of spec.config are applied to members that lack them
//     (decide_config.go); a change of the spec's mongod options is
//     recorded with rule 4's version check. A keyfile or CA rotation a
//     person asked for (decide_keyfile.go, decide_ca.go) writes its steps
//     with rule 4's TLS step, after the certificate is recorded
//     (decide_cert.go), and each step's roll ends in Recovering like a TLS
//     step.
//  7. Last, once no rule chose an action, spec.backup.schedules take their
//     backups and prune the old ones (decide_schedule.go), then the oplog
//     archive's chunks older than every backup kept are pruned
//     (decide_archive.go).
func Decide(s State, in Inputs) Decision {
	d := &decider{s: s, in: in}
	d.spec()
	if d.authRefused() {
		return d.out // the observation was read blind; look again as __system
	}
	d.settleInFlight()
	d.observe()
	d.observeVersions()
	d.backupResults()
	d.restoreResults()
	d.archiveResults()
	if in.Mgors.Spec.Paused || d.s.InFlight != nil || d.backingOff() {
		return d.out
	}
	d.versionChange()
	d.configChange()
	d.external()
	if d.tlsChange() || d.certificate() || d.caRotation() || d.keyfile() {
		return d.out // the observation predates the step's objects
	}
	if d.approvals() || d.nodeLoss() || d.users() || d.storage() {
		return d.out
	}
	d.restoreStart() // before a backup: a restore is the urgent one
	if d.backupStart() || d.archiveStart() {
		return d.out
	}
	switch d.s.Phase {
	case v1alpha1.PhaseProvisioning:
		d.provisioning()
	case v1alpha1.PhaseInitiating:
		d.initiating()
	case v1alpha1.PhaseHealthy:
		d.healthy()
	case v1alpha1.PhaseRecovering:
		d.recovering()
	default:
		d.phase(v1alpha1.PhaseProvisioning, "unknown phase "+string(d.s.Phase))
	}
	d.schedules()
	return d.out
}

func (d *decider) spec() {
	m := d.in.Mgors
	if m.Generation != d.s.Generation {
		d.emit(SpecObserved{Generation: m.Generation, Members: m.Spec.Members, Arbiters: m.Spec.Arbiters,
			Version: m.Spec.Version, Paused: m.Spec.Paused})
	}
}

func (d *decider) backingOff() bool {
	return d.s.LastFailure != nil && d.in.Now.Before(d.s.FailedAt.Add(backoff(d.s.Failures)))
}

func (d *decider) settleInFlight() {
	f := d.s.InFlight
	if f == nil {
		return
	}
	o := d.in.Obs
	done := false
	switch f.Action {
	case ActInitiate:
		done = o.Config != nil
	case ActCreateUser:
		done = o.AdminUser != nil && *o.AdminUser
	case ActReconfig:
		done = o.Config != nil && o.Config.Version >= f.ConfigVersion
	case ActForceReconfig:
		var settled bool
		if done, settled = d.settleForce(f); !settled {
			return // the survivor is silent: the force may have applied; never send a second
		}
	case ActScale:
		done = o.Replicas == f.Replicas
	case ActRemoveAnnotation:
		done = annotation(o, f.Target) == ""
	case ActFencePod:
		done = d.fenceSettled(f)
	case ActSetBudget:
		done = o.Budget == f.MinAvailable
	case ActDeleteArbiters:
		done = o.ArbiterReplicas < 0
	case ActCreateOperatorUser:
		done = o.OperatorUser != nil && *o.OperatorUser
	case ActUpdatePassword:
		done = d.passwordSettled(f)
	case ActSetFCV:
		done = d.fcvSettled()
	case ActExpandVolumes, ActReplaceStatefulSet:
		done = d.storageSettled(f)
	case ActApplyConfig:
		done = d.configSettled(f)
	case ActCreateBackup, ActPruneBackup:
		done = d.scheduleSettled(f)
	case ActRenewCertificate:
		done = o.Certificate != nil && o.Certificate.Version != f.SecretVersion
	case ActRotateKeyfile:
		done = d.keyfileSettled(f)
	case ActRotateCA:
		done = d.caSettled(f)
	}
	if !done {
		d.emit(ActionFailed{Action: f.Action, Target: f.Target, Error: "interrupted: the operator stopped before the result, and the world does not show the effect"})
		return
	}
	d.emit(ActionFinished{Action: f.Action, Target: f.Target, Observed: true})
	switch f.Action {
	case ActInitiate:
		d.emit(Initiated{Host: f.Target, ConfigVersion: o.Config.Version})
	case ActCreateUser:
		d.emit(AdminUserReady{User: "admin"})
	case ActScale:
		d.emit(ScaledTo{Replicas: f.Replicas})
	case ActCreateOperatorUser:
		d.emit(OperatorUserReady{User: f.User, Secret: f.Secret})
	case ActUpdatePassword:
		d.emit(PasswordApplied{User: f.User, Secret: f.Secret, SecretVersion: f.SecretVersion})
	}
}

// allAnswer reports whether every desired member answers hello, and names the
// first that does not.
func (d *decider) allAnswer() (bool, string) {
	for _, dm := range d.in.Desired {
		if mv, ok := d.in.Obs.Members[dm.Host]; !ok || !mv.Answers {
			return false, dm.Name
		}
	}
	return true, ""
}

func (d *decider) ensureObjects() bool {
	if d.in.Obs.ObjectsReady {
		return false
	}
	d.act(Action{Kind: ActEnsureObjects}, ActionStarted{Reason: d.in.Obs.ObjectsMessage})
	return true
}

func (d *decider) provisioning() {
	if d.ensureObjects() || d.budget() {
		return
	}
	if d.s.Initiated {
		d.phase(v1alpha1.PhaseRecovering, "the replica set already has a config; bringing it to the desired shape")
		return
	}
	if ok, _ := d.allAnswer(); ok {
		d.phase(v1alpha1.PhaseInitiating, "every member answers hello")
	}
}

func (d *decider) initiating() {
	if d.ensureObjects() || d.budget() {
		return
	}
	o := d.in.Obs
	if !d.s.Initiated {
		if ok, who := d.allAnswer(); !ok {
			d.phase(v1alpha1.PhaseProvisioning, who+" does not answer hello")
			return
		}
		// Invariant 1: every member answered hello without a set name and no
		// config read failed (observe records any config seen as Initiated).
		if o.ConfigErr != "" {
			return // a config that cannot be read is not "no config"
		}
		host, ok := initiator(d.in.Desired)
		if !ok {
			return // the schema guarantees an electable member; nothing sane to do
		}
		cfg := mongo.InitialConfig(d.in.Mgors.ReplSetName(), d.in.Desired, d.in.Mgors.Spec.ReplicaSet)
		d.act(Action{Kind: ActInitiate, Host: host, Config: &cfg},
			ActionStarted{Target: host, ConfigVersion: cfg.Version, Members: hosts(cfg), Reason: "no member holds a config"})
		return
	}
	if o.Primary == "" {
		return // waiting for the first election
	}
	if !d.s.AdminUser {
		if o.AdminUser == nil {
			return // not checked yet: never create a user blindly
		}
		d.act(Action{Kind: ActCreateUser, Host: o.Primary}, ActionStarted{Target: o.Primary, Reason: "the admin user does not exist"})
		return
	}
	d.phase(v1alpha1.PhaseHealthy, fmt.Sprintf("initiated with primary %s and the admin user", o.Primary))
}

// initiator is the member replSetInitiate is sent to: the lowest-ordinal
// electable data member (mongod refuses to initiate from an unelectable one).
func initiator(desired []mongo.DesiredMember) (string, bool) {
	for _, dm := range desired {
		if !dm.Arbiter && dm.Priority > 0 && dm.Votes > 0 {
			return dm.Host, true
		}
	}
	return "", false
}

func hosts(c mongo.Config) []string {
	out := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		out = append(out, m.Host)
	}
	return out
}

// unhealthy says why the cluster is not in the desired shape, "" when it is.
func (d *decider) unhealthy() string {
	o := d.in.Obs
	switch {
	case o.Config == nil:
		return "no member answers with the replica-set config"
	case o.Primary == "":
		return "the replica set has no primary"
	case o.Replicas != d.in.Mgors.Spec.Members:
		return fmt.Sprintf("the StatefulSet has %d pods, the spec asks for %d", o.Replicas, d.in.Mgors.Spec.Members)
	case d.in.Mgors.Spec.Arbiters == 0 && o.ArbiterReplicas >= 0:
		return "spec.arbiters is 0 and the arbiters' StatefulSet remains"
	}
	for _, dm := range d.in.Desired {
		mv := o.Members[dm.Host]
		if !mv.Answers {
			return dm.Name + " does not answer"
		}
		if mv.State != mongo.StatePrimary && mv.State != mongo.StateSecondary && mv.State != mongo.StateArbiter {
			return fmt.Sprintf("%s is %s", dm.Name, mv.State)
		}
	}
	step := mongo.Plan(*o.Config, o.Status, d.in.Desired, d.answering(), d.in.Mgors.Spec.ReplicaSet)
	if step.Kind != mongo.Done {
		return "membership: " + step.Reason
	}
	if why := d.storageUnfinished(); why != "" {
		return why
	}
	if pods := outdated(o); len(pods) > 0 {
		return fmt.Sprintf("%d pod(s) run an older template: rolling restart (%s)", len(pods), strings.Join(pods, ", "))
	}
	if why := d.configUnapplied(); why != "" {
		return why
	}
	if why := d.tlsUnfinished(); why != "" {
		return why
	}
	if why := d.keyfileUnfinished(); why != "" {
		return why
	}
	if why := d.caUnfinished(); why != "" {
		return why
	}
	return d.upgradeUnfinished()
}

func (d *decider) healthy() {
	if d.ensureObjects() {
		return
	}
	if why := d.unhealthy(); why != "" {
		d.phase(v1alpha1.PhaseRecovering, why)
		return
	}
	d.budget()
}

func (d *decider) recovering() {
	if d.ensureObjects() || d.budget() {
		return
	}
	o := d.in.Obs
	want := d.in.Mgors.Spec.Members
	if o.Config == nil {
		// Members down or starting: the StatefulSet brings them back. Every
		// member empty was recorded as VolumesLost: a person approves a
		// re-initiate (approvals); never on our own.
		return
	}
	if d.s.MajorityLost != nil {
		d.majorityPolicy()
		return
	}
	// Grow the StatefulSet first: a new pod does nothing until it is added.
	if o.Replicas >= 0 && o.Replicas < want {
		d.act(Action{Kind: ActScale, Replicas: want}, ActionStarted{Target: "statefulset", Replicas: want,
			Reason: fmt.Sprintf("spec.members is %d, the StatefulSet has %d", want, o.Replicas)})
		return
	}
	if o.Primary == "" {
		return // an election is due; mongod heals this by itself
	}
	if d.wipeDiverged() || d.wipeStuck() {
		return
	}
	step := mongo.Plan(*o.Config, o.Status, d.in.Desired, d.answering(), d.in.Mgors.Spec.ReplicaSet)
	switch {
	case step.Kind == mongo.StepDown:
		d.act(Action{Kind: ActStepDown, Host: step.Host}, ActionStarted{Target: step.Host, Reason: step.Reason})
		return
	case step.Reconfig():
		cfg := step.Config
		d.act(Action{Kind: ActReconfig, Host: o.Primary, Config: &cfg},
			ActionStarted{Target: o.Primary, ConfigVersion: cfg.Version, Members: hosts(cfg),
				Reason: string(step.Kind) + " " + step.Host + ": " + step.Reason})
		return
	case step.Kind == mongo.Wait:
		return
	}
	// Shrink the StatefulSet only once no member at or above the new size is in
	// the config: members leave the config before their pods go.
	if o.Replicas > want {
		for _, m := range o.Config.Members {
			if ordinalOf(d.in.Mgors, m.Host) >= want {
				return
			}
		}
		d.act(Action{Kind: ActScale, Replicas: want}, ActionStarted{Target: "statefulset", Replicas: want,
			Reason: fmt.Sprintf("members above ordinal %d left the config", want-1)})
		return
	}
	if d.removeArbiters() || d.roll() || d.applyConfig() || d.finishUpgrade() || d.finishTLS() || d.finishKeyfile() || d.finishCA() {
		return
	}
	if why := d.unhealthy(); why == "" {
		d.phase(v1alpha1.PhaseHealthy, "the replica set has the desired shape")
	}
}

// ordinalOf is the data-member ordinal a config host names, -1 for other hosts.
func ordinalOf(m *v1alpha1.Mgors, host string) int32 {
	name, _, _ := strings.Cut(host, ".")
	return podOrdinal(m, name)
}

// podOrdinal is the ordinal of a data member's pod name (NAME-N), -1 for other pods.
func podOrdinal(m *v1alpha1.Mgors, name string) int32 {
	prefix := m.Name + "-"
	if !strings.HasPrefix(name, prefix) {
		return -1
	}
	var n int32
	if _, err := fmt.Sscanf(name[len(prefix):], "%d", &n); err != nil || fmt.Sprint(n) != name[len(prefix):] {
		return -1
	}
	return n
}
