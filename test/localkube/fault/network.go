package fault

import (
	"context"
	"errors"
	"fmt"

	"github.com/mgors/operator/test/localkube/cluster"
)

// Partition drops traffic both ways between every pod of isolate and every pod of
// from (same namespace), tagged so Heal(tag) undoes exactly it. The rules match the
// pods' current IPs: a pod recreated with a new IP escapes the partition.
func (i *Injector) Partition(ctx context.Context, tag, namespace string, isolate, from []string) error {
	if len(isolate) == 0 || len(from) == 0 {
		return fmt.Errorf("partition %q: name pods on both sides (isolate %v, from %v)", tag, isolate, from)
	}
	a, err := i.podIPs(ctx, namespace, isolate)
	if err != nil {
		return err
	}
	b, err := i.podIPs(ctx, namespace, from)
	if err != nil {
		return err
	}
	if err := cluster.Partition(ctx, tag, a, b); err != nil {
		return err
	}
	i.Log.Info().Str("event", "fault.partition").Str("tag", tag).Str("namespace", namespace).
		Strs("isolate", isolate).Strs("from", from).Strs("isolateIPs", a).Strs("fromIPs", b).Msg("partitioned")
	return nil
}

// Heal removes the partition rules of tag ("" = every partition of the cluster).
func (i *Injector) Heal(ctx context.Context, tag string) error {
	n, err := cluster.Heal(ctx, tag)
	if err != nil {
		return err
	}
	i.Log.Info().Str("event", "fault.heal").Str("tag", tag).Int("rules", n).Msg("healed")
	return nil
}

// ErrNoPartition is the error of Drops for a tag without rules.
var ErrNoPartition = errors.New("no such partition")

// Drops returns the packets the rules of tag have dropped so far (nftables
// counters): the evidence a partition bit. A tag without rules is an error: there
// is no such partition (any more).
func (i *Injector) Drops(ctx context.Context, tag string) (int64, error) {
	packets, rules, err := cluster.Drops(ctx, tag)
	if err != nil {
		return 0, err
	}
	if rules == 0 {
		return 0, fmt.Errorf("tag %q: %w", tag, ErrNoPartition)
	}
	return packets, nil
}

// podIPs resolves pod names to their IPs through the API. Pods on the Node's
// network share the bridge address with the API server and every Node, so they
// cannot be partitioned by address.
func (i *Injector) podIPs(ctx context.Context, namespace string, pods []string) ([]string, error) {
	ips := make([]string, 0, len(pods))
	for _, name := range pods {
		p, err := i.pod(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		switch {
		case p.Spec.HostNetwork:
			return nil, fmt.Errorf("pod %s/%s uses the host network: it cannot be partitioned by address", namespace, name)
		case p.Status.PodIP == "":
			return nil, fmt.Errorf("pod %s/%s has no IP yet", namespace, name)
		}
		ips = append(ips, p.Status.PodIP)
	}
	return ips, nil
}
