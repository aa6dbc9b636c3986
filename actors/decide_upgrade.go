package actors

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// A version change (docs/design/upgrade.md):
//  1. The members' binaries (buildInfo) and the set's FCV are recorded when
//     they change (VersionsObserved).
//  2. A spec.version other than the state's Version is judged against the
//     FCV (mongo.BinaryAllowed): MongoDB runs the FCV's line or the next
//     major only. Refused: VersionRefused, and the objects keep the state's
//     Version, so nothing rolls. Accepted: UpgradeStarted, and the
//     StatefulSets take the new image.
//  3. The pods that run the older template restart one at a time through
//     the rolling restart (decide_roll.go): the arbiter and the secondaries
//     first, the primary last after replSetStepDown.
//  4. Once every member reports the new version in buildInfo (not merely
//     runs its image), the FCV is set to its line on the primary (FCVSet),
//     and the change is over (UpgradeFinished).

// specVersion is spec.version, or its default.
func specVersion(m *v1alpha1.Mgors) string {
	if m.Spec.Version == "" {
		return v1alpha1.DefaultVersion
	}
	return m.Spec.Version
}

// observeVersions records the binaries and the FCV when they changed; what
// is not known now keeps its last known value.
func (d *decider) observeVersions() {
	o, prev := d.in.Obs, d.s.Versions
	v := VersionsObserved{FCV: prev.FCV}
	if o.FCV != "" {
		v.FCV = o.FCV
	}
	for _, dm := range d.in.Desired {
		version := prev.Members[dm.Name]
		if mv := o.Members[dm.Host]; mv.Answers && mv.Version != "" {
			version = mv.Version
		}
		if version != "" {
			if v.Members == nil {
				v.Members = map[string]string{}
			}
			v.Members[dm.Name] = version
		}
	}
	if v.FCV != prev.FCV || !maps.Equal(v.Members, prev.Members) {
		d.emit(v)
	}
}

// versionChange accepts or refuses a new spec.version. It only records:
// the objects follow the state's Version at the next step.
func (d *decider) versionChange() {
	want := specVersion(d.in.Mgors)
	if want == d.s.Version {
		return
	}
	fcv := d.s.Versions.FCV
	if r := d.s.VersionRefused; r != nil && r.Version == want && r.FCV == fcv {
		return // refused already, on the same grounds
	}
	if !d.s.Initiated {
		// No data yet: nothing holds an FCV the binary must honour.
		d.emit(UpgradeStarted{From: d.s.Version, To: want})
		return
	}
	if fcv == "" {
		return // not known yet: never roll blind
	}
	if ok, why := mongo.BinaryAllowed(want, fcv); !ok {
		d.emit(VersionRefused{Version: want, Running: d.s.Version, FCV: fcv,
			Reason: "spec.version " + why})
		return
	}
	d.emit(UpgradeStarted{From: d.s.Version, To: want, FCV: fcv,
		Downgrade: mongo.CompareVersions(want, d.s.Version) < 0})
}

// runs says whether a member's binary is the version wanted: the same
// release, or of its line when wanted names only a line ("7.0") or when
// spec.image chooses the image (its release is the person's business).
func (d *decider) runs(binary, wanted string) bool {
	if mongo.Line(wanted) == wanted || d.in.Mgors.Spec.Image != "" {
		return mongo.Line(binary) == mongo.Line(wanted)
	}
	return binary == wanted
}

// upgradeUnfinished says what a version change under way still waits for,
// "" when there is none.
func (d *decider) upgradeUnfinished() string {
	u := d.s.Upgrade
	if u == nil {
		return ""
	}
	var behind []string
	for _, dm := range d.in.Desired {
		if mv := d.in.Obs.Members[dm.Host]; !mv.Answers || !d.runs(mv.Version, u.To) {
			behind = append(behind, dm.Name)
		}
	}
	if len(behind) > 0 {
		sort.Strings(behind)
		return fmt.Sprintf("upgrade to %s: %s do(es) not run it yet", u.To, strings.Join(behind, ", "))
	}
	return fmt.Sprintf("upgrade to %s: every member runs it; featureCompatibilityVersion %s to be set to %s", u.To, nonEmpty(d.in.Obs.FCV, "unknown"), mongo.Line(u.To))
}

// finishUpgrade sets the FCV once every member runs the new version, and
// ends the change; it returns true while it acts or waits.
func (d *decider) finishUpgrade() bool {
	u := d.s.Upgrade
	if u == nil {
		return false
	}
	o := d.in.Obs
	for _, dm := range d.in.Desired {
		if mv := o.Members[dm.Host]; !mv.Answers || !d.runs(mv.Version, u.To) {
			return true // the roll is not over (or buildInfo unanswered)
		}
	}
	target := mongo.Line(u.To)
	switch {
	case o.FCV == "" || o.Primary == "":
		return true
	case mongo.CompareLines(o.FCV, target) < 0:
		d.act(Action{Kind: ActSetFCV, Host: o.Primary}, ActionStarted{Target: o.Primary,
			Reason: fmt.Sprintf("every member runs %s: featureCompatibilityVersion %s → %s", u.To, o.FCV, target)})
		return true
	}
	if u.FCV != "" && o.FCV != u.FCV {
		d.emit(FCVSet{From: u.FCV, To: o.FCV})
	}
	d.emit(UpgradeFinished{Version: u.To, FCV: o.FCV})
	return false
}

// fcvSettled says whether a SetFeatureCompatibilityVersion in flight at a
// restart took effect: the FCV is the line of the state's Version.
func (d *decider) fcvSettled() bool {
	return d.in.Obs.FCV != "" && d.in.Obs.FCV == mongo.Line(d.s.Version)
}

// Running is m as the operator builds its objects: with the state's
// Version, so a refused spec.version (or one not yet judged) rolls nothing,
// and the state's spec.tls, so TLS changes one step at a time
// (decide_tls.go).
func Running(m *v1alpha1.Mgors, s State) *v1alpha1.Mgors {
	m = runningKeyfile(runningTLS(m, s), s)
	if s.Version == "" || s.Version == m.Spec.Version {
		return m
	}
	out := m.DeepCopy()
	out.Spec.Version = s.Version
	return out
}

// runningVersions are the distinct binaries the members run, in order.
func runningVersions(v VersionsObserved) string {
	var out []string
	for _, version := range v.Members {
		if !slices.Contains(out, version) {
			out = append(out, version)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
