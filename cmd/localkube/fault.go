package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/localkube/fault"
)

// faultUsage is the part of the usage text for `localkube fault`.
const faultUsage = `  localkube fault kill POD [CONTAINER] --dir DIR [-n NS]    SIGKILL a pod's containers (or one)
  localkube fault pause POD --dir DIR [-n NS]                SIGSTOP every container of a pod
  localkube fault resume POD --dir DIR [-n NS]               SIGCONT a paused pod
  localkube fault partition POD... --from POD... --dir DIR [-n NS] [--tag T]
                                                             drop traffic both ways between the two sets
  localkube fault heal --dir DIR [--tag T]                   remove the partition T (default: every partition)
  localkube fault node-down NODE --dir DIR                   kill a Node's kubelet and its pods' processes
  localkube fault node-up NODE --dir DIR                     start a downed Node's kubelet again
  localkube fault restart-control-plane --dir DIR            restart etcd, API server, controller manager, scheduler
`

// faultArgs is a parsed `localkube fault` command line.
type faultArgs struct {
	verb      string
	dir       string
	namespace string
	tag       string
	targets   []string // the positional arguments (before --from)
	from      []string // after --from
}

// defaultTag labels the partitions made from the command line.
const defaultTag = "localkube-fault"

// parseFault reads `localkube fault VERB ARGS...`. Flags may come anywhere:
// --dir, -n/--namespace and --tag take a value (also as --flag=value); after
// --from the pod names go to the other side of a partition.
func parseFault(args []string) (faultArgs, error) {
	a := faultArgs{namespace: "default"}
	if len(args) == 0 {
		return a, errors.New("which fault? kill, pause, resume, partition, heal, node-down, node-up or restart-control-plane")
	}
	a.verb, args = args[0], args[1:]
	inFrom := false
	for len(args) > 0 {
		arg := args[0]
		args = args[1:]
		name, value, hasValue := strings.Cut(arg, "=")
		switch name {
		case "--dir", "-dir", "-n", "--namespace", "-namespace", "--tag", "-tag":
			if !hasValue {
				if len(args) == 0 {
					return a, fmt.Errorf("%s needs a value", name)
				}
				value, args = args[0], args[1:]
			}
			switch strings.TrimLeft(name, "-") {
			case "dir":
				a.dir = value
			case "n", "namespace":
				a.namespace = value
			case "tag":
				a.tag = value
			}
		case "--from", "-from":
			if hasValue {
				a.from = append(a.from, value)
			}
			inFrom = true
		default:
			if strings.HasPrefix(arg, "-") {
				return a, fmt.Errorf("unknown flag %s", arg)
			}
			if inFrom {
				a.from = append(a.from, arg)
			} else {
				a.targets = append(a.targets, arg)
			}
		}
	}
	if a.dir == "" {
		return a, errors.New("--dir is required")
	}
	want := map[string][2]int{ // verb: min, max positional arguments
		"kill": {1, 2}, "pause": {1, 1}, "resume": {1, 1}, "partition": {1, -1}, "heal": {0, 0},
		"node-down": {1, 1}, "node-up": {1, 1}, "restart-control-plane": {0, 0},
	}
	n, ok := want[a.verb]
	if !ok {
		return a, fmt.Errorf("unknown fault %q: kill, pause, resume, partition, heal, node-down, node-up or restart-control-plane", a.verb)
	}
	if len(a.targets) < n[0] || (n[1] >= 0 && len(a.targets) > n[1]) {
		return a, fmt.Errorf("fault %s: wrong arguments %v; usage:\n%s", a.verb, a.targets, faultUsage)
	}
	if a.verb == "partition" && len(a.from) == 0 {
		return a, errors.New("fault partition: name the other side with --from POD [POD]")
	}
	if a.verb != "partition" && len(a.from) > 0 {
		return a, fmt.Errorf("fault %s: --from belongs to partition", a.verb)
	}
	if a.tag == "" && a.verb == "partition" {
		a.tag = defaultTag
	}
	return a, nil
}

// faultCmd runs one fault verb and prints what was done and its evidence.
func faultCmd(ctx context.Context, args []string, log zerolog.Logger) error {
	a, err := parseFault(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	inj, err := fault.New(a.dir, log.Level(zerolog.WarnLevel))
	if err != nil {
		return err
	}
	out := os.Stdout
	switch a.verb {
	case "kill":
		container := ""
		if len(a.targets) == 2 {
			container = a.targets[1]
		}
		ev, err := inj.Kill(ctx, a.namespace, a.targets[0], container)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, "killed:", ev)
	case "pause":
		ev, err := inj.Pause(ctx, a.namespace, a.targets[0])
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, "paused:", ev)
		_, _ = fmt.Fprintf(out, "resume with: localkube fault resume %s --dir %s -n %s\n", a.targets[0], a.dir, a.namespace)
	case "resume":
		ev, err := inj.Resume(ctx, a.namespace, a.targets[0])
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, "resumed:", ev)
	case "partition":
		if err := inj.Partition(ctx, a.tag, a.namespace, a.targets, a.from); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(out, "partitioned (tag %s): %s in namespace %s cut off from %s, both ways, by pod IP\n",
			a.tag, strings.Join(a.targets, " "), a.namespace, strings.Join(a.from, " "))
		_, _ = fmt.Fprintf(out, "heal with: localkube fault heal --dir %s --tag %s\n", a.dir, a.tag)
	case "heal":
		drops, err := inj.Drops(ctx, a.tag)
		if errors.Is(err, fault.ErrNoPartition) {
			what := "partition tagged " + a.tag
			if a.tag == "" {
				what = "partition"
			}
			_, _ = fmt.Fprintf(out, "no %s: nothing to heal\n", what)
			return nil
		}
		if err != nil {
			return err
		}
		if err := inj.Heal(ctx, a.tag); err != nil {
			return err
		}
		what := "every partition"
		if a.tag != "" {
			what = "partition " + a.tag
		}
		_, _ = fmt.Fprintf(out, "healed %s; its rules had dropped %d packets\n", what, drops)
	case "node-down":
		ev, err := inj.NodeDown(ctx, a.targets[0])
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, ev)
		_, _ = fmt.Fprintf(out, "the Node turns NotReady once its Lease expires (node-monitor-grace-period, 50 s); bring it back with: localkube fault node-up %s --dir %s\n", a.targets[0], a.dir)
	case "node-up":
		began := time.Now()
		if err := inj.NodeUp(ctx, a.targets[0]); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(out, "node %s up: kubelet started, Node Ready after %s\n", a.targets[0], time.Since(began).Round(time.Millisecond))
	case "restart-control-plane":
		ev, err := inj.RestartControlPlane(ctx)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, ev)
	}
	return nil
}
