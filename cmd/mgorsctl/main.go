// Command mgorsctl explains Mgors clusters to a person: it replays a cluster's
// event log as a timeline, rebuilds the state at any point, verifies the log,
// follows it live, and prints the members table. Installed as kubectl-mgors it
// is the kubectl plugin `kubectl mgors`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

const usage = `mgorsctl explains Mgors clusters.

Usage:
  mgorsctl replay  [source] [--at N] [-o table|json] [--verify]
  mgorsctl events  NAME [-n NAMESPACE] [--dir DIR]      follow a cluster's log live
  mgorsctl status  NAME [-n NAMESPACE]                  the members table
  mgorsctl wait    NAME [-n NAMESPACE] [--timeout 10m]  show progress until the cluster is Healthy

Sources for replay (one of):
  --cluster NS/NAME            the log kept in the cluster (kube store, via kubeconfig)
  --dir DIR --cluster NS/NAME  a file store directory (the operator's --event-dir)
  --logs FILE|-                saved 'kubectl logs' of the operator (or stdin);
                               --cluster NS/NAME picks one cluster when several are there
  --uid UID                    which incarnation, when a name was re-created

Common flags: --kubeconfig FILE (default $KUBECONFIG, then ~/.kube/config)
`

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mgorsctl:", err)
		os.Exit(1)
	}
}

type flags struct {
	cluster, dir, logs, uid, out, kubeconfig, namespace string
	at                                                  int64
	verify                                              bool
	poll, timeout                                       time.Duration
}

func parse(cmd string, args []string) (flags, []string, error) {
	var f flags
	fs := flag.NewFlagSet("mgorsctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.cluster, "cluster", "", "NS/NAME of the cluster")
	fs.StringVar(&f.dir, "dir", "", "file store directory")
	fs.StringVar(&f.logs, "logs", "", "operator log file, or - for stdin")
	fs.StringVar(&f.uid, "uid", "", "the incarnation's UID")
	fs.StringVar(&f.out, "o", "table", "table or json")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file")
	fs.StringVar(&f.namespace, "n", "default", "namespace")
	fs.Int64Var(&f.at, "at", 0, "print the state rebuilt at this sequence number")
	fs.BoolVar(&f.verify, "verify", false, "check the log and the fold, and compare with the status")
	fs.DurationVar(&f.poll, "poll", time.Second, "how often events and wait poll")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "how long wait waits")
	// Flags may follow positional arguments (kubectl style).
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return f, nil, fmt.Errorf("%w\n\n%s", err, usage)
		}
		args = fs.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	if f.out != "table" && f.out != "json" {
		return f, nil, fmt.Errorf("-o must be table or json, not %q", f.out)
	}
	return f, pos, nil
}

func run(args []string, stdin io.Reader, out io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		_, err := fmt.Fprint(out, usage)
		return err
	}
	cmd := args[0]
	f, pos, err := parse(cmd, args[1:])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch cmd {
	case "replay":
		return replay(ctx, f, stdin, out)
	case "events":
		if len(pos) != 1 {
			return errors.New("events needs the cluster's NAME")
		}
		f.cluster = f.namespace + "/" + pos[0]
		return follow(ctx, f, out)
	case "status":
		if len(pos) != 1 {
			return errors.New("status needs the cluster's NAME")
		}
		return status(ctx, f, pos[0], out)
	case "wait":
		if len(pos) != 1 {
			return errors.New("wait needs the cluster's NAME")
		}
		mc, err := mgorsClient(f)
		if err != nil {
			return err
		}
		return waitHealthy(ctx, mc, f, pos[0], out)
	}
	return fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
}

// loaded is a log as read from a source: a snapshot (maybe) and records.
type loaded struct {
	stream eventlog.Stream
	snap   *eventlog.Snapshot
	recs   []eventlog.Record
	store  eventlog.Store // nil for logs
}

func splitKey(key string) (string, string, error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok || ns == "" || name == "" {
		return "", "", fmt.Errorf("--cluster must be NAMESPACE/NAME, not %q", key)
	}
	return ns, name, nil
}

func load(ctx context.Context, f flags, stdin io.Reader) (loaded, error) {
	if f.cluster != "" {
		if _, _, err := splitKey(f.cluster); err != nil {
			return loaded{}, err
		}
	}
	switch {
	case f.logs != "":
		return loadLogs(f, stdin)
	case f.dir != "" || f.cluster != "":
		store, streams, err := openStore(ctx, f, nsOf(f.cluster))
		if err != nil {
			return loaded{}, err
		}
		all, err := streams()
		if err != nil {
			return loaded{}, err
		}
		s, err := pick(all, f)
		if err != nil {
			return loaded{}, err
		}
		snap, recs, err := store.Load(ctx, s)
		return loaded{stream: s, snap: snap, recs: recs, store: store}, err
	}
	return loaded{}, errors.New("replay needs a source: --cluster, --dir with --cluster, or --logs")
}

// openStore opens the store a command reads: the file store under --dir, or
// the cluster's ConfigMaps through the kubeconfig; streams lists its logs in
// namespace (all namespaces for the file store).
func openStore(ctx context.Context, f flags, namespace string) (eventlog.Store, func() ([]eventlog.Stream, error), error) {
	if f.dir != "" {
		fs, err := eventlog.NewFile(f.dir)
		if err != nil {
			return nil, nil, err
		}
		return fs, fs.Streams, nil
	}
	kc, err := kubeClient(f)
	if err != nil {
		return nil, nil, err
	}
	ks := eventlog.NewKube(kc)
	return ks, func() ([]eventlog.Stream, error) { return ks.StreamsIn(ctx, namespace) }, nil
}

func nsOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// pick chooses the stream of --cluster (and --uid when several incarnations exist).
func pick(streams []eventlog.Stream, f flags) (eventlog.Stream, error) {
	var match []eventlog.Stream
	for _, s := range streams {
		if (f.cluster == "" || s.Key() == f.cluster) && (f.uid == "" || s.UID == f.uid) {
			match = append(match, s)
		}
	}
	switch len(match) {
	case 0:
		return eventlog.Stream{}, fmt.Errorf("no event log for %q (uid %q)", f.cluster, f.uid)
	case 1:
		return match[0], nil
	}
	var names []string
	for _, s := range match {
		names = append(names, s.String())
	}
	sort.Strings(names)
	return eventlog.Stream{}, fmt.Errorf("several logs match; choose with --cluster and --uid: %s", strings.Join(names, ", "))
}

func loadLogs(f flags, stdin io.Reader) (loaded, error) {
	r := stdin
	if f.logs != "-" {
		fh, err := os.Open(f.logs)
		if err != nil {
			return loaded{}, err
		}
		defer func() { _ = fh.Close() }()
		r = fh
	}
	all, err := eventlog.ParseLogs(r)
	if err != nil {
		return loaded{}, err
	}
	byStream := map[eventlog.Stream][]eventlog.Record{}
	var streams []eventlog.Stream
	for _, rec := range all {
		ns, name, _ := strings.Cut(rec.Cluster, "/")
		s := eventlog.Stream{Namespace: ns, Name: name, UID: rec.UID}
		if _, ok := byStream[s]; !ok {
			streams = append(streams, s)
		}
		byStream[s] = append(byStream[s], rec)
	}
	s, err := pick(streams, f)
	if err != nil {
		return loaded{}, err
	}
	recs := byStream[s]
	// An operator that restarted logs some records again only if it wrote them
	// again, which it never does: keep the first of each seq, in order.
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	dedup := recs[:0]
	for i, r := range recs {
		if i == 0 || r.Seq != recs[i-1].Seq {
			dedup = append(dedup, r)
		}
	}
	return loaded{stream: s, recs: dedup}, nil
}

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
	if l.snap != nil {
		w.printf("# from the snapshot at seq %d (%s): phase %s\n", l.snap.Seq, l.snap.Time.Format(time.RFC3339), s.Phase)
	}
	w.printf("SEQ\tTIME\tEVENT\tPHASE\tDETAIL" + "\n")
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
		return d
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

func hasDefaultKubeconfig() bool {
	home, err := os.UserHomeDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(home, ".kube", "config"))
	return err == nil
}

// follow prints a cluster's records as they are written.
func follow(ctx context.Context, f flags, out io.Writer) error {
	store, streams, err := openStore(ctx, f, f.namespace)
	if err != nil {
		return err
	}
	var last int64
	for {
		all, err := streams()
		if err != nil {
			return err
		}
		if s, err := pick(all, f); err == nil {
			_, recs, err := store.Load(ctx, s)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if r.Seq > last {
					e, ok, _ := actors.Decode(r)
					detail := ""
					if ok {
						detail = describe(e)
					}
					if _, err := fmt.Fprintf(out, "%d\t%s\t%s\t%s\n", r.Seq, r.Time.Format(time.RFC3339), r.Type, detail); err != nil {
						return err
					}
					last = r.Seq
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(f.poll):
		}
	}
}

func status(ctx context.Context, f flags, name string, out io.Writer) error {
	mc, err := mgorsClient(f)
	if err != nil {
		return err
	}
	m, err := mc.Mgorses(f.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return printStatus(out, m)
}

func printStatus(out io.Writer, m *v1alpha1.Mgors) error {
	st := m.Status
	w := newSheet(out)
	w.printf("%s/%s\tphase %s\tready %s\tprimary %s\n", m.Namespace, m.Name, st.Phase, st.Ready, st.Primary)
	w.printf("replica set %s\tconfig %d/%d\tevent log seq %d (%s)\n", st.ReplicaSetName, st.ConfigVersion, st.ConfigTerm, st.EventLog.Sequence, st.EventLog.Store)
	if st.ConnectionString != "" {
		w.printf("connect\t%s\n", st.ConnectionString)
	}
	w.printf("\nMEMBER\tSTATE\tHEALTHY\tLAG(s)\tVOTES\tPRIORITY\tHIDDEN" + "\n")
	for _, ms := range st.Members {
		w.printf("%s\t%s\t%t\t%d\t%d\t%d\t%t\n", ms.Name, ms.State, ms.Healthy, ms.OptimeLagSeconds, ms.Votes, ms.Priority, ms.Hidden)
	}
	w.printf("\nCONDITION\tSTATUS\tREASON\tMESSAGE" + "\n")
	for _, c := range st.Conditions {
		w.printf("%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return w.flush()
}

func loadingRules(f flags) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
}

func kubeClient(f flags) (kubernetes.Interface, error) {
	cfg, err := loadingRules(f).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

func mgorsClient(f flags) (client.Interface, error) {
	cfg, err := loadingRules(f).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return client.NewForConfig(cfg)
}

// progress is what wait shows of a cluster: a new line whenever it changes.
func progress(m *v1alpha1.Mgors) string {
	st := m.Status
	line := fmt.Sprintf("phase %-12s ready %-5s primary %s", nonEmpty(string(st.Phase), "-"), nonEmpty(st.Ready, "-"), nonEmpty(st.Primary, "-"))
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue {
			line += "  stalled: " + c.Message
		}
		if c.Type == v1alpha1.ConditionProgressing && c.Status == metav1.ConditionTrue {
			line += "  (" + c.Message + ")"
		}
	}
	return line
}

func nonEmpty(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// waitHealthy polls the Mgors and prints its progress until it is Healthy with
// a primary, or the timeout passes.
func waitHealthy(ctx context.Context, mc client.Interface, f flags, name string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	start, last := time.Now(), ""
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := mc.Mgorses(f.namespace).Get(cctx, name, metav1.GetOptions{})
		ccancel()
		switch {
		case err == nil:
			if line := progress(m); line != last {
				if _, err := fmt.Fprintf(out, "%6.1fs  %s\n", time.Since(start).Seconds(), line); err != nil {
					return err
				}
				last = line
			}
			if m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != "" && m.Status.ObservedGeneration == m.Generation {
				return nil
			}
		case ctx.Err() == nil:
			if line := "waiting for " + name + ": " + err.Error(); line != last {
				if _, err := fmt.Fprintf(out, "%6.1fs  %s\n", time.Since(start).Seconds(), line); err != nil {
					return err
				}
				last = line
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s is not Healthy after %s; see mgorsctl status %s and kubectl describe mgors %s", f.namespace, name, f.timeout, name, name)
		case <-time.After(f.poll):
		}
	}
}

// sheet is a tabwriter that keeps the first write error and reports it at flush.
type sheet struct {
	w   *tabwriter.Writer
	err error
}

func newSheet(out io.Writer) *sheet { return &sheet{w: tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)} }

func (s *sheet) printf(format string, a ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, a...)
	}
}

func (s *sheet) flush() error {
	if s.err != nil {
		return s.err
	}
	return s.w.Flush()
}
