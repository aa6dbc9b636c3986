package actors

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// StatusFor is the status the cluster should show: derived from the state and
// the latest observation only, so it is the same whoever computes it (the live
// actor, or `mgorsctl replay --verify`). Conditions carry no timestamps here;
// the status writer keeps lastTransitionTime when a condition does not change.
func StatusFor(s State, o Observation, m *v1alpha1.Mgors, store, clusterDomain string) v1alpha1.MgorsStatus {
	st := v1alpha1.MgorsStatus{
		Phase:                    s.Phase,
		ObservedGeneration:       s.Generation,
		Primary:                  podName(s.View, s.View.Primary),
		ReplicaSetName:           m.ReplSetName(),
		ConfigVersion:            s.View.ConfigVersion,
		ConfigTerm:               s.View.ConfigTerm,
		EventLog:                 v1alpha1.EventLogPosition{Sequence: s.Seq, Store: store},
		Replicas:                 max(o.Replicas, 0),
		Selector:                 "app.kubernetes.io/instance=" + m.Name + ",app.kubernetes.io/component=member",
		ConnectionString:         kube.ConnectionString(connectable(m, s), clusterDomain),
		ExternalConnectionString: externalConnectionString(m, s),
	}
	st.Version, st.FeatureCompatibilityVersion = runningVersions(s.Versions), s.Versions.FCV
	st.Rotations = rotations(s)
	st.Backup = BackupSummary(s, o, m)
	healthy := int32(0)
	var primaryOptime mongo.OpTime
	if o.Status != nil {
		for _, ms := range o.Status.Members {
			if ms.State == mongo.StatePrimary {
				primaryOptime = ms.Optime
			}
		}
	}
	for _, md := range s.View.Members {
		ms := v1alpha1.MemberStatus{Name: md.Name, Host: md.Host, State: md.State, Healthy: md.Healthy,
			Votes: md.Votes, Priority: md.Prio, Hidden: md.Hidden, Version: s.Versions.Members[md.Name]}
		if o.Status != nil && primaryOptime.TS.T > 0 {
			for _, x := range o.Status.Members {
				if mongo.SameHost(x.Name, md.Host) && x.Optime.TS.T > 0 && x.State != mongo.StateArbiter {
					ms.OptimeLagSeconds = max(int64(primaryOptime.TS.T)-int64(x.Optime.TS.T), 0)
				}
			}
		}
		if md.Healthy {
			healthy++
		}
		st.Members = append(st.Members, ms)
	}
	desired := m.Spec.Members + m.Spec.Arbiters
	st.Ready = fmt.Sprintf("%d/%d", healthy, desired)

	condStatus := func(t string, status metav1.ConditionStatus, reason, msg string) {
		st.Conditions = append(st.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: s.Generation})
	}
	cond := func(t string, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		condStatus(t, status, reason, msg)
	}
	ready := s.Phase == v1alpha1.PhaseHealthy && s.View.Primary != ""
	if ready {
		cond(v1alpha1.ConditionReady, true, "Healthy", fmt.Sprintf("primary %s, %s members healthy", st.Primary, st.Ready))
	} else {
		cond(v1alpha1.ConditionReady, false, string(s.Phase), nonEmpty(s.PhaseReason, "the cluster is not yet in the desired shape"))
	}
	if s.Initiated {
		cond(v1alpha1.ConditionInitialized, true, "Initiated", "the replica set has a config")
	} else {
		cond(v1alpha1.ConditionInitialized, false, "NotInitiated", "the replica set has not been initiated yet")
	}
	switch {
	case s.InFlight != nil:
		cond(v1alpha1.ConditionProgressing, true, string(s.InFlight.Action), nonEmpty(s.InFlight.Reason, string(s.InFlight.Action)))
	case s.Phase != v1alpha1.PhaseHealthy:
		cond(v1alpha1.ConditionProgressing, true, string(s.Phase), nonEmpty(s.PhaseReason, string(s.Phase)))
	case len(st.Rotations) > 0: // Healthy between two steps of a rotation
		r := st.Rotations[len(st.Rotations)-1]
		cond(v1alpha1.ConditionProgressing, true, r.Kind+"Rotation", fmt.Sprintf("%s rotation %s, step %s: %s", r.Kind, r.Request, r.Step, r.Message))
	default:
		cond(v1alpha1.ConditionProgressing, false, "Stable", "nothing to change")
	}
	answering := 0
	for _, mv := range o.Members {
		if mv.Answers {
			answering++
		}
	}
	switch {
	case s.MajorityLost != nil:
		msg := s.MajorityLost.Evidence + "; missing " + strings.Join(s.MajorityLost.Missing, ", ")
		if m.Spec.Recovery.MajorityLoss == v1alpha1.RecoveryAutomatic {
			grace := v1alpha1.DefaultGracePeriod
			if g := m.Spec.Recovery.GracePeriod; g != nil {
				grace = g.Duration
			}
			msg += fmt.Sprintf("; policy Automatic: a reconfig is forced onto the reachable member with the newest optime if the majority is still lost at %s",
				s.MajorityLostAt.Add(grace).UTC().Format(time.RFC3339))
		} else {
			msg += fmt.Sprintf("; policy Manual: annotate the Mgors with %s=<member> to force a reconfig onto that member (it must answer and hold the newest optime among the reachable)", ForceAnnotation)
		}
		if r := s.Refused; r != nil && r.Annotation == ForceAnnotation {
			msg += fmt.Sprintf("; the approval %s was refused: %s", r.Value, r.Reason)
		}
		cond(v1alpha1.ConditionMajorityLost, true, "VotersUnreachable", msg)
	case s.Initiated && answering == 0:
		condStatus(v1alpha1.ConditionMajorityLost, metav1.ConditionUnknown, "NoMemberAnswers", "no member answers: whether a majority of voting members is up cannot be told")
	case s.Initiated && o.Status == nil:
		condStatus(v1alpha1.ConditionMajorityLost, metav1.ConditionUnknown, "StatusUnreadable", "no member's replSetGetStatus could be read")
	default:
		cond(v1alpha1.ConditionMajorityLost, false, "MajorityReachable", "a majority of voting members answers")
	}
	switch {
	case s.VolumesLost != nil:
		msg := fmt.Sprintf("every member (%s) answers without a config although the replica set was initiated: every volume was lost. The operator does not initiate again on its own; to start afresh with no data, annotate the Mgors with %s=%s",
			strings.Join(s.VolumesLost.Members, ", "), ReinitiateAnnotation, m.UID)
		if r := s.Refused; r != nil && r.Annotation == ReinitiateAnnotation {
			msg += fmt.Sprintf("; the approval %s was refused: %s", r.Value, r.Reason)
		}
		cond(v1alpha1.ConditionStalled, true, "VolumesLost", msg)
	case s.VersionRefused != nil:
		r := s.VersionRefused
		cond(v1alpha1.ConditionStalled, true, "VersionRefused", fmt.Sprintf("%s; nothing was rolled: the members keep %s (set spec.version back, or change the featureCompatibilityVersion first)", r.Reason, r.Running))
	case len(s.Problems) > 0:
		var msgs []string
		for _, p := range s.Problems {
			msgs = append(msgs, p.Message)
		}
		cond(v1alpha1.ConditionStalled, true, s.Problems[0].Reason, strings.Join(msgs, "; "))
	case s.Storage != nil && s.Storage.Refused:
		cond(v1alpha1.ConditionStalled, true, "VolumeExpansionNotAllowed", refusal(s.Storage.To, s.Storage.Class))
	case s.LastFailure != nil:
		cond(v1alpha1.ConditionStalled, true, string(s.LastFailure.Action)+"Failed", s.LastFailure.Error)
	default:
		cond(v1alpha1.ConditionStalled, false, "NotStalled", "nothing blocks progress")
	}
	if m.Spec.Paused {
		cond(v1alpha1.ConditionPaused, true, "SpecPaused", "spec.paused is set: the operator observes and changes nothing")
	} else {
		cond(v1alpha1.ConditionPaused, false, "NotPaused", "the operator manages the cluster")
	}
	sort.Slice(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
	st.Backup = withArchive(st.Backup, s, o, m)
	return st
}

// ForceAnnotation is the annotation a person sets, under the Manual
// majority-loss policy, to name the member a forced reconfig keeps.
const ForceAnnotation = "mgors.io/force-reconfigure-onto"

func podName(v MembersObserved, host string) string {
	for _, m := range v.Members {
		if m.Host == host {
			return m.Name
		}
	}
	return host
}

func nonEmpty(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// connectionString is a replica-set URI with no credentials.
func marshalState(s State) ([]byte, error) { return json.Marshal(s) }

func unmarshalState(b []byte, s *State) error { return json.Unmarshal(b, s) }
