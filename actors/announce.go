package actors

import (
	"fmt"
	"strings"
	"time"

	"github.com/mgors/operator/actors/eventlog"
)

// Announcement is how an event of a procedure of several steps (TLS mode
// steps and renewals, keyfile and CA rotations, storage growth) is told to
// people: the reason and message of its Kubernetes Event (Warning when
// warning), also the line `mgorsctl replay` prints. ok is false for other
// events.
func Announcement(e Event) (reason, message string, warning, ok bool) {
	for _, told := range []func(Event) (string, string, bool, bool){storageAnnouncement, backupAnnouncement, restoreAnnouncement, archiveAnnouncement} {
		if reason, message, warning, ok = told(e); ok {
			return reason, message, warning, ok
		}
	}
	for _, told := range []func(Event) (string, string, bool){tlsAnnouncement, keyfileAnnouncement, caAnnouncement} {
		if reason, message, ok = told(e); ok {
			return reason, message, false, true
		}
	}
	return "", "", false, false
}

// announce writes the record's log line, Kubernetes Event and metrics.
func (c *cluster) announce(r eventlog.Record, before State, e Event) {
	reason := ""
	switch e := e.(type) {
	case PhaseChanged:
		reason = e.Reason
		c.deps.World.Event(c.mgors, false, "PhaseChanged", fmt.Sprintf("%s → %s: %s", e.From, e.To, e.Reason))
		if c.deps.Metrics != nil {
			c.deps.Metrics.Transition(c.stream.Key(), e.From, e.To)
			c.deps.Metrics.Phase(c.stream.Key(), e.To)
		}
	case ActionStarted:
		reason = e.Reason
	case ActionFailed:
		reason = e.Error
		c.deps.World.Event(c.mgors, true, string(e.Action)+"Failed", e.Error)
	case Initiated:
		if !e.Found {
			c.deps.World.Event(c.mgors, false, "Initiated", fmt.Sprintf("replica set initiated on %s", e.Host))
		}
	case AdminUserReady:
		if !e.Found {
			c.deps.World.Event(c.mgors, false, "UserCreated", "admin user created")
		}
	case OperatorUserReady:
		if !e.Found {
			c.deps.World.Event(c.mgors, false, "UserCreated", fmt.Sprintf("operator user %s created (password in Secret %s)", e.User, e.Secret))
		}
	case AuthSwitched:
		reason = e.Reason
		c.deps.World.Event(c.mgors, e.To != AuthOperator, "AuthSwitched", fmt.Sprintf("authenticating as %s: %s", e.To, e.Reason))
	case PasswordApplied:
		c.deps.World.Event(c.mgors, false, "PasswordApplied", fmt.Sprintf("user %s has the password of Secret %s (resourceVersion %s)", e.User, e.Secret, e.SecretVersion))
	case ConfigChanged:
		if msg := configChangedMessage(e); msg != "" {
			reason = msg
			c.deps.World.Event(c.mgors, false, "ConfigChanged", msg)
		}
	case ExternalAddressesChanged:
		c.deps.World.Event(c.mgors, e.Missing != "", "ExternalAddresses", externalMessage(e))
	case ActionFinished:
		if e.Action == ActApplyConfig && before.InFlight != nil {
			c.deps.World.Event(c.mgors, false, "ConfigApplied", fmt.Sprintf("%s: %s", e.Target, before.InFlight.Reason))
		}
		if e.Action == ActReconfig {
			c.deps.World.Event(c.mgors, false, "Reconfigured", fmt.Sprintf("replica-set config version %d", c.state.View.ConfigVersion))
		}
	case MajorityLost:
		reason = e.Evidence
		c.deps.World.Event(c.mgors, true, "MajorityLost", e.Evidence)
	case ForceDecided:
		reason = atRisk(e)
		c.deps.World.Event(c.mgors, true, "ForceReconfig", fmt.Sprintf("%s policy: forcing the config onto %s; writes at risk: %s", e.Policy, e.Survivor, reason))
	case ForceAbandoned:
		reason = e.Reason
		c.deps.World.Event(c.mgors, false, "ForceAbandoned", fmt.Sprintf("the force onto %s was not sent: %s", e.Survivor, e.Reason))
	case ApprovalAccepted:
		c.deps.World.Event(c.mgors, false, "ApprovalAccepted", e.Annotation+"="+e.Value)
	case ApprovalRefused:
		reason = e.Reason
		c.deps.World.Event(c.mgors, true, "ApprovalRefused", fmt.Sprintf("%s=%s: %s", e.Annotation, e.Value, e.Reason))
	case ActionUncertain:
		reason = e.Error
		c.deps.World.Event(c.mgors, true, string(e.Action)+"Uncertain", e.Error+"; settled from the world, never sent twice")
	case VolumesLost:
		reason = "every member answers without a config"
		c.deps.World.Event(c.mgors, true, "VolumesLost", fmt.Sprintf("every member (%s) answers without a config on an initiated replica set; not initiating on its own: annotate %s=<the Mgors's UID> to approve a fresh initiate",
			strings.Join(e.Members, ", "), ReinitiateAnnotation))
	case NodeLost:
		reason = "node " + e.Node + " NotReady"
		c.deps.World.Event(c.mgors, true, "NodeLost", fmt.Sprintf("node %s NotReady since %s: force-deleting member pods %s", e.Node, e.Since.UTC().Format(time.RFC3339), strings.Join(e.Pods, ", ")))
	case WorldDisagreed:
		reason = e.World
	case UpgradeStarted:
		reason = fmt.Sprintf("spec.version %s → %s (featureCompatibilityVersion %s)", e.From, e.To, nonEmpty(e.FCV, "none yet"))
		c.deps.World.Event(c.mgors, false, "UpgradeStarted", reason+": members restart one at a time, secondaries first, the primary after a step-down")
	case VersionRefused:
		reason = e.Reason
		c.deps.World.Event(c.mgors, true, "VersionRefused", fmt.Sprintf("%s; the members keep %s", e.Reason, e.Running))
	case FCVSet:
		c.deps.World.Event(c.mgors, false, "FCVSet", fmt.Sprintf("featureCompatibilityVersion %s → %s", e.From, e.To))
	case UpgradeFinished:
		c.deps.World.Event(c.mgors, false, "UpgradeFinished", fmt.Sprintf("every member runs %s, featureCompatibilityVersion %s", e.Version, e.FCV))
	default:
		if why, msg, warning, ok := Announcement(e); ok {
			reason = msg
			c.deps.World.Event(c.mgors, warning, why, msg)
			c.announceBackup(e)
			c.announceRestore(e)
		}
	}
	// The base logger: the record names its cluster and UID itself, and the
	// actor's logger has them too (no key twice on a line).
	eventlog.LogEvent(c.deps.Log, r, eventlog.Transition{PhaseBefore: string(before.Phase), Phase: string(c.state.Phase), Reason: reason})
}
