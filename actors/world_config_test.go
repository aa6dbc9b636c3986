package actors

import (
	"context"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/mongotest"
)

// The World reads the runtime options the spec sets from every data member
// that answers (not the arbiter), and an ApplyConfig sets typed parameters
// and resizes the oplog.
func TestWorldObservesAndAppliesRuntimeConfig(t *testing.T) {
	ctx := context.Background()
	m := demo(2)
	m.Spec.Config = &v1alpha1.MongodConfig{SetParameter: map[string]v1alpha1.ParameterValue{"logLevel": "1", "notablescan": "true", "ttlMonitorSleepSecs": "5"}}
	m.Spec.Storage.OplogSizeMB = ptr.To(int32(2000))
	w := newWorld(m).initiated()
	rs := mongotest.New("demo", w.desired[0].Host, w.desired[1].Host)
	rs.SetParameter(w.desired[0].Host, "logLevel", "0")
	mv := w.obs.Members[w.desired[1].Host]
	mv.Arbiter = true // as if it were the arbiter: not asked
	w.obs.Members[w.desired[1].Host] = mv

	kw := &KubeWorld{}
	kw.observeMongod(ctx, rs, m, &w.obs)
	first := w.obs.Mongod[w.desired[0].Host]
	if first.Err != "" || first.Parameters["logLevel"] != "0" || first.OplogSizeMB != mongotest.DefaultOplogMB {
		t.Fatalf("observed %+v", first)
	}
	if _, asked := first.Parameters["ttlMonitorSleepSecs"]; asked {
		t.Errorf("a startup-only parameter was read: %+v", first)
	}
	if arb, asked := w.obs.Mongod[w.desired[1].Host]; asked {
		t.Errorf("the arbiter was asked: %+v", arb)
	}
	a := Action{Kind: ActApplyConfig, Host: w.desired[0].Host, Parameters: map[string]string{"logLevel": "1", "notablescan": "true"}, OplogSizeMB: 2000}
	if err := actApplyConfig(ctx, rs, a); err != nil {
		t.Fatal(err)
	}
	kw.observeMongod(ctx, rs, m, &w.obs)
	if got := w.obs.Mongod[w.desired[0].Host]; got.Parameters["logLevel"] != "1" || got.Parameters["notablescan"] != "true" || got.OplogSizeMB != 2000 {
		t.Fatalf("after ApplyConfig: %+v", got)
	}
	if err := actApplyConfig(ctx, rs, Action{Host: w.desired[0].Host, OplogSizeMB: 100}); err == nil {
		t.Error("an oplog of 100 MB was accepted")
	}
}
