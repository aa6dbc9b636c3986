package actors

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// observeMongod reads, from every data member that answers, the runtime
// options the spec sets: getParameter of its runtime parameters and the
// oplog's size (decide_config.go). All members at once, each call bounded
// like every call; nothing is asked when the spec sets none. Not the
// arbiter: it holds no users (the operator's own user cannot log in to
// it) and no oplog; it takes the values at its next start, from its
// command line.
func (w *KubeWorld) observeMongod(ctx context.Context, admin mongo.Admin, m *v1alpha1.Mgors, o *Observation) {
	var names []string
	for name := range m.RuntimeParameters() {
		names = append(names, name)
	}
	slices.Sort(names)
	oplog := oplogTarget(m) > 0
	if len(names) == 0 && !oplog {
		return
	}
	type answer struct {
		host string
		view MongodView
	}
	var hosts []string
	for host, mv := range o.Members {
		if mv.Answers && !mv.Arbiter {
			hosts = append(hosts, host)
		}
	}
	answers := make(chan answer, len(hosts))
	for _, host := range hosts {
		go func() {
			var v MongodView
			var err error
			if len(names) > 0 {
				v.Parameters, err = admin.Parameters(ctx, host, names)
			}
			if err == nil && oplog {
				v.OplogSizeMB, err = admin.OplogSizeMB(ctx, host)
			}
			if err != nil {
				v = MongodView{Err: err.Error()}
			}
			answers <- answer{host, v}
		}()
	}
	o.Mongod = make(map[string]MongodView, len(hosts))
	for range hosts {
		a := <-answers
		o.Mongod[a.host] = a.view
	}
}

// actApplyConfig sets an ApplyConfig's parameters on its member, typed as
// each parameter takes them, then resizes the member's oplog.
func actApplyConfig(ctx context.Context, admin mongo.Admin, a Action) error {
	if len(a.Parameters) > 0 {
		values := make(map[string]any, len(a.Parameters))
		for name, text := range a.Parameters {
			switch v1alpha1.Parameters[name].Kind {
			case v1alpha1.ParameterBool:
				values[name] = text == "true"
			case v1alpha1.ParameterInt:
				n, err := strconv.ParseInt(text, 10, 64)
				if err != nil {
					return fmt.Errorf("spec.config.setParameter.%s: %q is not a whole number", name, text)
				}
				values[name] = n
			default:
				values[name] = text
			}
		}
		if err := admin.SetParameters(ctx, a.Host, values); err != nil {
			return err
		}
	}
	if a.OplogSizeMB > 0 {
		return admin.ResizeOplog(ctx, a.Host, a.OplogSizeMB)
	}
	return nil
}
