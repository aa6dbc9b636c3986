// Command mgorsctl explains Mgors clusters to a person: it replays a cluster's
// event log as a timeline, rebuilds the state at any point, verifies the log,
// follows it live, and prints the members table. Installed as kubectl-mgors it
// is the kubectl plugin `kubectl mgors`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
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
	// before are the records the snapshot covers that the kube store kept
	// (--eventlog-keep): shown for the story, never folded (the snapshot is).
	before []eventlog.Record
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
		if err != nil {
			return loaded{}, err
		}
		l := loaded{stream: s, snap: snap, recs: recs, store: store}
		if ks, ok := store.(*eventlog.Kube); ok && snap != nil {
			hist, err := ks.History(ctx, s)
			if err != nil {
				return loaded{}, err
			}
			for _, r := range hist {
				if r.Seq <= snap.Seq {
					l.before = append(l.before, r)
				}
			}
		}
		return l, nil
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
