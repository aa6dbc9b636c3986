package actors

// The observation's part of Decide: what changed in the world since the
// state last saw it (Decide calls observe first, on every decision).

import (
	"fmt"
	"slices"
	"sort"

	"github.com/mgors/operator/mongo"
)

// observe records what changed in the world since the state last saw it.
func (d *decider) observe() {
	o := d.in.Obs
	claims := d.s.Claims // before this view: a claim replaced since is a new volume
	view := digest(d.in, o)
	if !sameView(view, d.s.View) {
		d.emit(view)
	}
	problems := o.Problems
	if !slices.Equal(problems, d.s.Problems) {
		d.emit(ProblemsObserved{Problems: problems})
	}
	if !d.s.Initiated {
		if host, version, ok := configSeen(o); ok {
			d.emit(WorldDisagreed{Subject: "initiated", Log: "no initiate recorded",
				World: fmt.Sprintf("%s holds config version %d", host, version)})
			d.emit(Initiated{Host: host, ConfigVersion: version, Found: true})
		}
	}
	if d.s.Initiated && !d.s.AdminUser && o.AdminUser != nil && *o.AdminUser {
		d.emit(AdminUserReady{User: "admin", Found: true})
	}
	if d.s.Initiated && !d.s.OperatorUser && o.OperatorUser != nil && *o.OperatorUser {
		d.emit(OperatorUserReady{User: o.Operator.User, Secret: o.Operator.Secret, Found: true})
	}
	if d.s.VolumesLost != nil {
		if host, version, ok := configSeen(o); ok {
			d.emit(WorldDisagreed{Subject: "volumes lost", Log: "every member answered without a config",
				World: fmt.Sprintf("%s holds config version %d", host, version)})
			d.emit(Initiated{Host: host, ConfigVersion: version, Found: true})
		}
	}
	for _, key := range []string{ForceAnnotation, ReinitiateAnnotation, RotateKeyfileAnnotation, RotateCAAnnotation} {
		if _, handled := d.s.Handled[key]; handled && annotation(o, key) == "" &&
			(d.s.InFlight == nil || d.s.InFlight.Action != ActRemoveAnnotation) {
			d.emit(ApprovalWithdrawn{Annotation: key})
		}
	}
	d.observeMajority()
	d.volumesLost()
	d.observeTroubles(claims)
}

// configSeen names a member that holds a config: the config read, or else a
// member whose hello shows a set name (its config could not be read).
func configSeen(o Observation) (host string, version int64, ok bool) {
	if o.Config != nil {
		return o.ConfigFrom, o.Config.Version, true
	}
	var names []string
	for h, mv := range o.Members {
		if mv.Answers && mv.HasConfig {
			names = append(names, h)
		}
	}
	if len(names) == 0 {
		return "", 0, false
	}
	sort.Strings(names)
	return names[0], o.Members[names[0]].ConfigVersion, true
}

func evidenceHosts(ms []mongo.MemberEvidence) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Host)
	}
	sort.Strings(out)
	return out
}

// digest reduces an observation to what decisions depend on.
func digest(in Inputs, o Observation) MembersObserved {
	v := MembersObserved{Primary: o.Primary, Pods: int32(len(o.Pods))}
	if o.Status != nil && o.Primary != "" {
		v.CommitPoint = optime(o.Status.Optimes.LastCommittedOpTime)
	}
	if o.Config != nil {
		v.ConfigVersion, v.ConfigTerm = o.Config.Version, o.Config.Term
	}
	names := map[string]string{}
	for _, dm := range in.Desired {
		names[mongo.NormalizeHost(dm.Host)] = dm.Name
	}
	seen := map[string]bool{}
	add := func(host string, votes int32, prio int32, hidden bool) {
		h := mongo.NormalizeHost(host)
		if seen[h] {
			return
		}
		seen[h] = true
		mv := o.Members[host]
		state := mv.State.String()
		if !mv.Answers {
			state = "UNREACHABLE"
		}
		healthy := mv.Answers && (mv.State == mongo.StatePrimary || mv.State == mongo.StateSecondary || mv.State == mongo.StateArbiter)
		name := names[h]
		if name == "" {
			name = mv.Name
		}
		v.Members = append(v.Members, MemberDigest{Name: name, Host: host, State: state, Healthy: healthy, Votes: votes, Prio: prio, Hidden: hidden,
			Claim: o.Claims[name]})
	}
	if o.Config != nil {
		for _, m := range o.Config.Members {
			add(m.Host, int32(m.Votes), int32(m.Priority), m.Hidden)
		}
	}
	for _, dm := range in.Desired {
		if o.Config == nil || o.Config.Member(dm.Host) == nil {
			add(dm.Host, 0, 0, false)
		}
	}
	sort.Slice(v.Members, func(i, j int) bool { return v.Members[i].Host < v.Members[j].Host })
	return v
}

func sameView(a, b MembersObserved) bool {
	return a.Primary == b.Primary && a.ConfigVersion == b.ConfigVersion && a.ConfigTerm == b.ConfigTerm &&
		a.Pods == b.Pods && slices.Equal(a.Members, b.Members)
}
