package chaos

import "context"

// Faults injects the faults of the suite into a localkube cluster. It is the
// method set of the fault injector (package test/localkube/fault); the runner
// codes against it so the injector stays replaceable.
type Faults interface {
	// Kill SIGKILLs a container of a pod (every container when container is "").
	Kill(ctx context.Context, namespace, pod, container string) (evidence string, err error)
	// Pause freezes a pod's processes (SIGSTOP); Resume continues them.
	Pause(ctx context.Context, namespace, pod string) (string, error)
	Resume(ctx context.Context, namespace, pod string) (string, error)
	// Partition cuts isolate off from from (pod names of namespace), both ways,
	// under tag; Heal removes the rules of tag; Drops counts the packets they dropped.
	Partition(ctx context.Context, tag, namespace string, isolate, from []string) error
	Heal(ctx context.Context, tag string) error
	Drops(ctx context.Context, tag string) (int64, error)
	// NodeDown kills a node's kubelet and its pods' processes; NodeUp brings it back.
	NodeDown(ctx context.Context, node string) (string, error)
	NodeUp(ctx context.Context, node string) error
	// RestartControlPlane stops etcd and the API server (and the controllers)
	// and starts them again.
	RestartControlPlane(ctx context.Context) (string, error)
}
