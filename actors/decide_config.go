package actors

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// A mongod configuration change (docs/design/mongod-config.md):
//  1. The options the spec asks for (spec.config, spec.storage.oplogSizeMB)
//     are recorded when they change (ConfigChanged), with how each reaches
//     the members.
//  2. Options mongod reads only at startup change the pod template's hash
//     (kube/config.go): the rolling restart (decide_roll.go) restarts the
//     members one at a time, secondaries first, the primary after a
//     step-down, and each starts with the new command line.
//  3. After the roll, each answering member whose runtime parameters or
//     oplog size differ from the spec, as observed (getParameter, collStats
//     of local.oplog.rs), gets them at run time, one member per action
//     (ApplyConfig: setParameter, replSetResizeOplog). Authenticated as its
//     own user, the operator first grants that user mongo.ConfigRole
//     (GrantConfigRole, once: its built-in roles do not allow those two). The decision reads the
//     running values, so it is the same after a crash: a member that already
//     has them is left alone, one that restarted on an older command line
//     gets them again.

// MongodView is one member's runtime options as observed: the runtime
// parameters the spec sets (as text, absent when the member does not know
// one) and its oplog's size in MB (0 when not asked). Err says why they
// could not be read; the member is then left alone.
type MongodView struct {
	Parameters  map[string]string `json:"parameters,omitempty"`
	OplogSizeMB int64             `json:"oplogSizeMB,omitempty"`
	Err         string            `json:"err,omitempty"`
}

// minOplogResizeMB is the smallest size replSetResizeOplog accepts.
const minOplogResizeMB = 990

// oplogTarget is the oplog size the running members must have, 0 when
// none: spec.storage.oplogSizeMB when replSetResizeOplog accepts it.
func oplogTarget(m *v1alpha1.Mgors) int64 {
	if mb := m.Spec.Storage.OplogSizeMB; mb != nil && *mb >= minOplogResizeMB {
		return int64(*mb)
	}
	return 0
}

// mongodOptions flattens the mongod options of the spec (ConfigChanged).
func mongodOptions(m *v1alpha1.Mgors) map[string]string {
	out := map[string]string{}
	if c := m.Spec.Config; c != nil {
		if c.WiredTigerCacheSizeGB != "" {
			out["wiredTigerCacheSizeGB"] = c.WiredTigerCacheSizeGB
		}
		if p := c.Profiling; p != nil {
			out["profile"] = nonEmpty(string(p.Mode), "off")
			if p.SlowOpThresholdMs != nil {
				out["slowms"] = strconv.Itoa(int(*p.SlowOpThresholdMs))
			}
		}
		for k, v := range c.SetParameter {
			out["setParameter."+k] = string(v)
		}
	}
	if mb := m.Spec.Storage.OplogSizeMB; mb != nil {
		out["oplogSizeMB"] = strconv.Itoa(int(*mb))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// configChange records the spec's mongod options when they changed, and
// for an initiated set how each change reaches the members.
func (d *decider) configChange() {
	want, had := mongodOptions(d.in.Mgors), d.s.MongodOptions
	if maps.Equal(want, had) {
		return
	}
	e := ConfigChanged{Options: want}
	if !d.s.Initiated {
		d.emit(e) // nothing runs on data yet: every member starts with them
		return
	}
	var names []string
	for k := range want {
		if had[k] != want[k] {
			names = append(names, k)
		}
	}
	for k := range had {
		if _, ok := want[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		change := fmt.Sprintf("%s %s → %s", k, nonEmpty(had[k], "unset"), nonEmpty(want[k], "unset"))
		name, param := strings.CutPrefix(k, "setParameter.")
		_, was := had[k]
		_, is := want[k]
		switch {
		case k == "oplogSizeMB" && oplogTarget(d.in.Mgors) > 0:
			e.Runtime = append(e.Runtime, change)
		case k == "oplogSizeMB":
			e.Later = append(e.Later, change)
		case param && was && is && v1alpha1.Parameters[name].Runtime:
			e.Runtime = append(e.Runtime, change)
		default:
			e.Restart = append(e.Restart, change)
		}
	}
	d.emit(e)
}

// wantedParameter is a parameter's value as getParameter shows it: a
// whole number without leading zeros.
func wantedParameter(name, value string) string {
	if v1alpha1.Parameters[name].Kind == v1alpha1.ParameterInt {
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	}
	return value
}

// configDiff is what host lacks of the spec's runtime options: the
// parameters to set, the oplog size (0: none) and the changes in words.
// A member not observed (not answering, or its options unreadable) lacks
// nothing that can be known; the arbiter is never asked (world_config.go).
func (d *decider) configDiff(host string, arbiter bool) (map[string]string, int64, []string) {
	mv, ok := d.in.Obs.Mongod[host]
	if arbiter || !ok || mv.Err != "" || !d.in.Obs.Members[host].Answers {
		return nil, 0, nil
	}
	var params map[string]string
	var words []string
	for name, value := range d.in.Mgors.RuntimeParameters() {
		want := wantedParameter(name, value)
		if got := mv.Parameters[name]; got != want {
			if params == nil {
				params = map[string]string{}
			}
			params[name] = want
			words = append(words, fmt.Sprintf("%s %s → %s", name, nonEmpty(got, "unknown"), want))
		}
	}
	slices.Sort(words)
	var oplog int64
	if target := oplogTarget(d.in.Mgors); target > 0 && mv.OplogSizeMB > 0 && mv.OplogSizeMB != target {
		oplog = target
		words = append(words, fmt.Sprintf("oplog %d MB → %d MB", mv.OplogSizeMB, target))
	}
	return params, oplog, words
}

// configUnapplied says which member lacks the spec's runtime options, ""
// when none does.
func (d *decider) configUnapplied() string {
	for _, dm := range d.in.Desired {
		if _, _, words := d.configDiff(dm.Host, dm.Arbiter); len(words) > 0 {
			return fmt.Sprintf("%s runs with %s: to be applied at run time", dm.Name, strings.Join(words, ", "))
		}
	}
	return ""
}

// applyConfig applies the runtime options to one member that lacks them,
// once every member is healthy and no pod waits for a restart (the roll
// comes first: a restarted member starts with them); it returns true when
// it acts.
func (d *decider) applyConfig() bool {
	for _, dm := range d.in.Desired {
		params, oplog, words := d.configDiff(dm.Host, dm.Arbiter)
		if len(words) == 0 {
			continue
		}
		if d.s.Auth == AuthOperator && !d.s.ConfigRole {
			if d.in.Obs.Primary == "" {
				return true // the grant is a write: wait for a primary
			}
			d.act(Action{Kind: ActGrantConfigRole, Host: d.in.Obs.Primary}, ActionStarted{Target: d.in.Obs.Primary,
				Reason: "the operator's user needs setParameter and replSetResizeOplog (role " + mongo.ConfigRole + ") to apply spec.config"})
			return true
		}
		d.act(Action{Kind: ActApplyConfig, Host: dm.Host, Parameters: params, OplogSizeMB: oplog},
			ActionStarted{Target: dm.Host, Reason: "spec.config at run time, without a restart: " + strings.Join(words, ", ")})
		return true
	}
	return false
}

// configSettled says whether an ApplyConfig in flight at a restart took
// effect: its member now has the spec's runtime options.
func (d *decider) configSettled(f *ActionStarted) bool {
	for _, dm := range d.in.Desired {
		if dm.Host == f.Target {
			_, _, words := d.configDiff(dm.Host, dm.Arbiter)
			mv, seen := d.in.Obs.Mongod[dm.Host]
			return len(words) == 0 && seen && mv.Err == ""
		}
	}
	return false
}
