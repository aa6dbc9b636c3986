// The replay verbs: the timeline, the state at a point, and --verify.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
)

func start(l loaded) (actors.State, error) {
	s := actors.Initial()
	if l.snap != nil {
		if err := json.Unmarshal(l.snap.State, &s); err != nil {
			return s, fmt.Errorf("snapshot at seq %d: %w", l.snap.Seq, err)
		}
	}
	return s, nil
}

func replay(ctx context.Context, f flags, stdin io.Reader, out io.Writer) error {
	l, err := load(ctx, f, stdin)
	if err != nil {
		return err
	}
	s, err := start(l)
	if err != nil {
		return err
	}
	if f.verify {
		return verify(ctx, f, l, out)
	}
	if f.at > 0 {
		var upto []eventlog.Record
		for _, r := range l.recs {
			if r.Seq <= f.at {
				upto = append(upto, r)
			}
		}
		if l.snap != nil && f.at < l.snap.Seq {
			return fmt.Errorf("seq %d is before the snapshot at %d: the log was compacted", f.at, l.snap.Seq)
		}
		s, err = actors.Fold(s, upto)
		if err != nil {
			return err
		}
		return printState(out, s, f.out)
	}
	return timeline(out, l, s)
}

// timeline prints one line per record: seq, time, event, phase before → after, detail.
func timeline(out io.Writer, l loaded, s actors.State) error {
	w := newSheet(out)
	w.printf("# %s\n", l.stream)
	if len(l.before) > 0 {
		w.printf("# kept before the snapshot: seq %d to %d (the state is folded from the snapshot)\n", l.before[0].Seq, l.before[len(l.before)-1].Seq)
	}
	if l.snap != nil {
		w.printf("# from the snapshot at seq %d (%s): phase %s\n", l.snap.Seq, l.snap.Time.Format(time.RFC3339), s.Phase)
	}
	w.printf("SEQ\tTIME\tEVENT\tPHASE\tDETAIL" + "\n")
	for _, r := range l.before {
		e, ok, err := actors.Decode(r)
		if err != nil {
			return err
		}
		phase, detail := "", "(unknown event type)"
		if ok {
			detail = describe(e)
		}
		if pc, isPhase := e.(actors.PhaseChanged); isPhase {
			phase = string(pc.From) + " → " + string(pc.To)
		}
		w.printf("%d\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Format("15:04:05.000"), r.Type, phase, detail)
	}
	if err := eventlog.CheckSequence(s.Seq, l.recs); err != nil {
		w.printf("# warning: %v\n", err)
	}
	for _, r := range l.recs {
		e, ok, err := actors.Decode(r)
		if err != nil {
			return err
		}
		before := s.Phase
		detail := "(unknown event type)"
		if ok {
			s = actors.Evolve(s, r.Seq, r.Time, e)
			detail = describe(e)
		}
		phase := string(s.Phase)
		if before != s.Phase {
			phase = string(before) + " → " + string(s.Phase)
		}
		w.printf("%d\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Format("15:04:05.000"), r.Type, phase, detail)
	}
	return w.flush()
}

// describe is a one-line account of an event, for people.
func describe(e actors.Event) string {
	switch e := e.(type) {
	case actors.SpecObserved:
		return fmt.Sprintf("generation %d: %d members, version %s, paused %t", e.Generation, e.Members, e.Version, e.Paused)
	case actors.PhaseChanged:
		return e.Reason
	case actors.ActionStarted:
		d := string(e.Action)
		if e.Target != "" {
			d += " on " + e.Target
		}
		if e.ConfigVersion > 0 {
			d += fmt.Sprintf(" (config version %d)", e.ConfigVersion)
		}
		if e.Replicas > 0 {
			d += fmt.Sprintf(" (replicas %d)", e.Replicas)
		}
		if e.Action == actors.ActSetBudget {
			d += fmt.Sprintf(" (minAvailable %d)", e.MinAvailable)
		}
		if e.Reason != "" {
			d += ": " + e.Reason
		}
		return d
	case actors.ActionFinished:
		if e.Observed {
			return string(e.Action) + " done (seen in the world)"
		}
		return string(e.Action) + " done"
	case actors.ActionFailed:
		return string(e.Action) + " failed: " + e.Error
	case actors.Initiated:
		if e.Found {
			return "the replica set already had a config (found on " + e.Host + ")"
		}
		return "initiated on " + e.Host
	case actors.AdminUserReady:
		if e.Found {
			return "admin user found"
		}
		return "admin user created"
	case actors.OperatorUserReady:
		if e.Found {
			return "operator user " + e.User + " found"
		}
		return "operator user " + e.User + " created (password in Secret " + e.Secret + ")"
	case actors.AuthSwitched:
		return "authenticating as " + e.To.String() + " instead of " + e.From.String() + ": " + e.Reason
	case actors.PasswordApplied:
		return "user " + e.User + " has the password of Secret " + e.Secret + " at resourceVersion " + e.SecretVersion
	case actors.MembersObserved:
		var ms []string
		for _, m := range e.Members {
			ms = append(ms, m.Name+"="+m.State)
		}
		return fmt.Sprintf("primary %q, config %d/%d, %s", e.Primary, e.ConfigVersion, e.ConfigTerm, strings.Join(ms, " "))
	case actors.ProblemsObserved:
		if len(e.Problems) == 0 {
			return "no problems"
		}
		var ps []string
		for _, p := range e.Problems {
			ps = append(ps, p.Reason+": "+p.Message)
		}
		return strings.Join(ps, "; ")
	case actors.MajorityLost:
		return e.Evidence + "; missing " + strings.Join(e.Missing, ", ")
	case actors.MajorityRestored:
		return "majority reachable again: " + strings.Join(e.Reachable, ", ")
	case actors.WorldDisagreed:
		return fmt.Sprintf("%s: log says %q, world says %q (the world wins)", e.Subject, e.Log, e.World)
	case actors.ScaledTo:
		return fmt.Sprintf("StatefulSet at %d replicas", e.Replicas)
	default:
		return describeRecovery(e)
	}
}

// describeRecovery accounts for the recovery events: who approved what, what
// a force keeps and drops and the writes it puts at risk.
func describeRecovery(e actors.Event) string {
	switch e := e.(type) {
	case actors.ForceDecided:
		d := fmt.Sprintf("policy %s", e.Policy)
		if e.Approval != "" {
			d += " (approved: " + e.Approval + ")"
		}
		d += fmt.Sprintf(": onto %s at %s; keeps %s, drops %s; commit point %s", e.Survivor, e.SurvivorOptime,
			strings.Join(e.Kept, ", "), strings.Join(e.Dropped, ", "), e.CommitPoint)
		switch {
		case e.MajorityWritesLost:
			d += "; w:majority writes between the survivor and the commit point are lost"
		case e.Unknown:
			d += "; the dropped members' optimes are unknown: writes past the survivor's may be lost"
		}
		if e.BestMissing != "" {
			d += fmt.Sprintf("; %s was last seen at %s (%d s of oplog past the survivor)", e.BestMissing, e.BestMissingOptime, e.GapSeconds)
		}
		if !e.LossSeen.IsZero() {
			d += "; at risk at most: writes acknowledged before the loss was seen at " + e.LossSeen.UTC().Format("15:04:05.000")
		}
		return d
	case actors.ForceAbandoned:
		return fmt.Sprintf("force onto %s not sent: %s", e.Survivor, e.Reason)
	case actors.ApprovalRefused:
		return fmt.Sprintf("%s=%s refused: %s", e.Annotation, e.Value, e.Reason)
	case actors.ApprovalAccepted:
		return fmt.Sprintf("%s=%s accepted", e.Annotation, e.Value)
	case actors.ApprovalWithdrawn:
		return e.Annotation + " removed by a person"
	case actors.ActionUncertain:
		return fmt.Sprintf("%s %s: outcome unknown (%s); settled from the world", e.Action, e.Target, e.Error)
	case actors.VolumesLost:
		return "every member answers without data: " + strings.Join(e.Members, ", ")
	case actors.NodeLost:
		return fmt.Sprintf("node %s NotReady since %s: %s", e.Node, e.Since.UTC().Format(time.RFC3339), strings.Join(e.Pods, ", "))
	case actors.MemberResyncing:
		d := e.Member + " resyncs by itself: " + e.Evidence
		if e.Progress != "" && !strings.Contains(e.Evidence, e.Progress) {
			d += "; " + e.Progress
		}
		return d
	case actors.MemberStuck:
		return fmt.Sprintf("%s stuck (%s): %s", e.Member, e.Kind, e.Evidence)
	case actors.MemberRecovered:
		return fmt.Sprintf("%s is %s (after %s since %s)", e.Member, e.State, e.Trouble, e.Since.UTC().Format(time.RFC3339))
	}
	if d := describeUpgrade(e); d != "" {
		return d
	}
	if _, msg, _, ok := actors.Announcement(e); ok {
		return msg
	}
	return ""
}

func printState(out io.Writer, s actors.State, format string) error {
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	w := newSheet(out)
	w.printf("seq\t%d\nphase\t%s\nreason\t%s\ngeneration\t%d\ninitiated\t%t (initiates by the operator: %d)\nadmin user\t%t\n",
		s.Seq, s.Phase, s.PhaseReason, s.Generation, s.Initiated, s.Initiates, s.AdminUser)
	w.printf("primary\t%s\nconfig\tversion %d, term %d\nreconfigs\t%d (forced %d)\n", s.View.Primary, s.View.ConfigVersion, s.View.ConfigTerm, s.Reconfigs, s.ForcedReconfigs)
	w.printf("version\t%s (featureCompatibilityVersion %s)\n", s.Version, nonEmpty(s.Versions.FCV, "unknown"))
	if s.InFlight != nil {
		w.printf("in flight\t%s %s\n", s.InFlight.Action, s.InFlight.Target)
	}
	if s.MajorityLost != nil {
		w.printf("majority lost\t%s\n", s.MajorityLost.Evidence)
	}
	w.printf("\nMEMBER\tHOST\tSTATE\tHEALTHY\tVOTES\tPRIORITY" + "\n")
	for _, m := range s.View.Members {
		w.printf("%s\t%s\t%s\t%t\t%d\t%d\n", m.Name, m.Host, m.State, m.Healthy, m.Votes, m.Prio)
	}
	return w.flush()
}

// verify checks that the log is gapless, that folding it twice gives the same
// state (the fold is deterministic), and, when the cluster is reachable, that
// the final state matches what the operator wrote in the status.
func verify(ctx context.Context, f flags, l loaded, out io.Writer) error {
	s0, err := start(l)
	if err != nil {
		return err
	}
	if err := eventlog.CheckSequence(s0.Seq, l.recs); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	a, err := actors.Fold(s0, l.recs)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	s1, _ := start(l)
	b, _ := actors.Fold(s1, l.recs)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		return errors.New("verify: folding the same log twice gave different states")
	}
	if _, err := fmt.Fprintf(out, "log: %d records, gapless, fold deterministic; final seq %d, phase %s\n", len(l.recs), a.Seq, a.Phase); err != nil {
		return err
	}
	if f.logs != "" || f.kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && !hasDefaultKubeconfig() {
		_, err := fmt.Fprintln(out, "status: not compared (no cluster to read it from)")
		return err
	}
	mc, err := mgorsClient(f)
	if err != nil {
		return err
	}
	m, err := mc.Mgorses(l.stream.Namespace).Get(ctx, l.stream.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Mgors: %w", err)
	}
	if string(m.UID) != l.stream.UID {
		return fmt.Errorf("verify: the Mgors %s is another incarnation (uid %s, log %s)", l.stream.Key(), m.UID, l.stream.UID)
	}
	var diffs []string
	check := func(what string, log, st any) {
		if fmt.Sprint(log) != fmt.Sprint(st) {
			diffs = append(diffs, fmt.Sprintf("%s: log %v, status %v", what, log, st))
		}
	}
	check("phase", a.Phase, m.Status.Phase)
	check("event-log sequence", a.Seq, m.Status.EventLog.Sequence)
	check("observedGeneration", a.Generation, m.Status.ObservedGeneration)
	check("config version", a.View.ConfigVersion, m.Status.ConfigVersion)
	if len(diffs) > 0 {
		return fmt.Errorf("verify: the status differs from the log's final state: %s", strings.Join(diffs, "; "))
	}
	_, err = fmt.Fprintln(out, "status: matches the log's final state")
	return err
}
