package kube

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// spec.config on the mongod command line (docs/design/mongod-config.md).
//
// Every option is on the command line, so a member that starts for any
// reason starts with the spec. The pod template's hash, which decides which
// members the actor restarts, covers what needs a restart only: the
// options mongod reads at startup, and the names of the runtime parameters
// (a parameter removed returns to mongod's default only at a restart), but
// not their values, nor --oplogSize (mongod uses it only when it creates the
// oplog; the actor resizes running members' oplogs). Those the actor applies
// to the running members itself.

// runtimeValue stands for a runtime parameter's value in the hashed spec.
const runtimeValue = "(applied at run time)"

// profileLevels are --profile's levels by operationProfiling.mode.
var profileLevels = map[v1alpha1.ProfilingMode]string{"": "0", "off": "0", "slowOp": "1", "all": "2"}

// configArgs are spec.config's mongod options, parameters sorted by name.
func configArgs(m *v1alpha1.Mgors) []string {
	c := m.Spec.Config
	if c == nil {
		return nil
	}
	var args []string
	if c.WiredTigerCacheSizeGB != "" {
		args = append(args, "--wiredTigerCacheSizeGB", c.WiredTigerCacheSizeGB)
	}
	if p := c.Profiling; p != nil {
		args = append(args, "--profile", profileLevels[p.Mode])
		if p.SlowOpThresholdMs != nil {
			args = append(args, "--slowms", strconv.Itoa(int(*p.SlowOpThresholdMs)))
		}
	}
	names := make([]string, 0, len(c.SetParameter))
	for name := range c.SetParameter {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		args = append(args, "--setParameter", name+"="+string(c.SetParameter[name]))
	}
	return args
}

// restartSpec is pod as far as a change of it needs a restart: the mongod
// command without --oplogSize and with the runtime parameters' values
// replaced by runtimeValue.
func restartSpec(pod *corev1.PodSpec) *corev1.PodSpec {
	out := pod.DeepCopy()
	for i := range out.Containers {
		c := &out.Containers[i]
		if c.Name != MongodContainer {
			continue
		}
		var cmd []string
		for j := 0; j < len(c.Command); j++ {
			arg := c.Command[j]
			if j+1 < len(c.Command) {
				next := c.Command[j+1]
				if arg == "--oplogSize" {
					j++
					continue
				}
				if name, _, ok := strings.Cut(next, "="); arg == "--setParameter" && ok && v1alpha1.Parameters[name].Runtime {
					cmd = append(cmd, arg, name+"="+runtimeValue)
					j++
					continue
				}
			}
			cmd = append(cmd, arg)
		}
		c.Command = cmd
	}
	return out
}
