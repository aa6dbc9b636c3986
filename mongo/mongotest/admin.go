package mongotest

// The fake's answers to the mongo.Admin calls; the set's own model (members,
// configs, elections, replication) is in mongotest.go.

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/mongo"
)

// Hello implements mongo.Admin.
func (r *ReplicaSet) Hello(ctx context.Context, host string) (mongo.HelloReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "hello")
	if err != nil {
		return mongo.HelloReply{}, err
	}
	h := mongo.HelloReply{MaxWireVersion: 21}
	if n.config == nil || n.state == mongo.StateRemoved {
		h.IsReplicaSet, h.Info = true, "Does not have a valid replica set config"
		return h, nil
	}
	h.SetName, h.SetVersion, h.Me = n.config.ID, n.config.Version, n.host
	for _, m := range n.config.Members {
		switch {
		case m.ArbiterOnly:
			h.Arbiters = append(h.Arbiters, m.Host)
		case m.Hidden:
		case m.Priority == 0:
			h.Passives = append(h.Passives, m.Host)
		default:
			h.Hosts = append(h.Hosts, m.Host)
		}
	}
	if p := r.primary(); p != nil {
		h.Primary = p.host
	}
	me := n.config.Member(n.host)
	h.IsWritablePrimary = n.state == mongo.StatePrimary
	h.Secondary = n.state == mongo.StateSecondary
	h.ArbiterOnly = n.state == mongo.StateArbiter
	h.Hidden = me != nil && me.Hidden
	return h, nil
}

// Ping implements mongo.Admin.
func (r *ReplicaSet) Ping(ctx context.Context, host string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.begin(ctx, host, "ping")
	return err
}

func (r *ReplicaSet) replEnabled(n *node, allowRemoved bool) error {
	if n.config == nil {
		return serverErr(n.host, mongo.CodeNotYetInitialized, "NotYetInitialized", "no replset config has been received")
	}
	if n.state == mongo.StateRemoved && !allowRemoved {
		return serverErr(n.host, mongo.CodeInvalidReplicaSetConfig, "InvalidReplicaSetConfig", "Our replica set config is invalid or we are not a member of it")
	}
	return nil
}

// Status implements mongo.Admin: the set as host sees it.
func (r *ReplicaSet) Status(ctx context.Context, host string) (*mongo.Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetGetStatus")
	if err != nil {
		return nil, err
	}
	if err := r.replEnabled(n, false); err != nil {
		return nil, err
	}
	cfg := *n.config
	st := &mongo.Status{Set: cfg.ID, MyState: n.state, Term: r.term, MajorityVoteCount: cfg.MajorityVoteCount(), VotingMembersCount: cfg.Voters()}
	for _, m := range cfg.Members {
		ms := mongo.MemberStatus{ID: m.ID, Name: m.Host, State: mongo.StateDown, Health: 0, LastHeartbeatMessage: "Error connecting: Connection refused"}
		if o := r.nodes[mongo.NormalizeHost(m.Host)]; o != nil {
			ms.Optime = o.optime
			if o.config != nil {
				ms.ConfigVersion, ms.ConfigTerm = o.config.Version, o.config.Term
			}
			if o.up {
				ms.State, ms.Health, ms.LastHeartbeatMessage = o.state, 1, ""
				if o.config == nil {
					ms.State = mongo.StateStartup
				}
			}
			ms.Self = o == n
		} else {
			ms.Health, ms.State = -1, mongo.StateUnknown
		}
		if m.ArbiterOnly {
			ms.Optime = mongo.OpTime{}
		}
		ms.StateStr = ms.State.String()
		if ms.Health == 0 {
			ms.StateStr = "(not reachable/healthy)"
		}
		st.Members = append(st.Members, ms)
	}
	slices.SortFunc(st.Members, func(a, b mongo.MemberStatus) int { return a.ID - b.ID })
	return st, nil
}

// Config implements mongo.Admin.
func (r *ReplicaSet) Config(ctx context.Context, host string) (mongo.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetGetConfig")
	if err != nil {
		return mongo.Config{}, err
	}
	if err := r.replEnabled(n, true); err != nil {
		return mongo.Config{}, err
	}
	return n.config.Clone(), nil
}

// Initiate implements mongo.Admin.
func (r *ReplicaSet) Initiate(ctx context.Context, host string, config mongo.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetInitiate")
	if err != nil {
		return err
	}
	invalid := func(format string, a ...any) error {
		return serverErr(n.host, mongo.CodeInvalidReplicaSetConfig, "InvalidReplicaSetConfig", format, a...)
	}
	if n.config != nil {
		return serverErr(n.host, mongo.CodeAlreadyInitialized, "AlreadyInitialized", "already initialized")
	}
	if config.Settings != nil && config.Settings.ReplicaSetID != nil {
		return invalid("replica set configuration cannot contain 'replicaSetId' field when called from replSetInitiate")
	}
	if config.ID != r.name {
		return invalid("Rejecting initiate with a set name that differs from command line set name, initiate set name: %s, command line set name: %s", config.ID, r.name)
	}
	if err := mongo.Validate(config); err != nil {
		return invalid("%v", err)
	}
	if config.Version != 1 {
		return invalid("Configuration used to initiate a replica set must  have version 1, but found %d", config.Version)
	}
	me := config.Member(n.host)
	if me == nil {
		return invalid("No host described in new configuration with {version: 1, term: 0} for replica set %s maps to this node", r.name)
	}
	if !me.Electable() {
		return invalid("This node, %s, with _id %d is not electable under the new configuration with {version: 1, term: 0} for replica set %s", n.host, me.ID, r.name)
	}
	var failed []string
	for _, m := range config.Members {
		o := r.nodes[mongo.NormalizeHost(m.Host)]
		switch {
		case o == n:
		case o == nil || !o.up:
			failed = append(failed, m.Host+" failed with Connection refused")
		case o.config != nil:
			return serverErr(n.host, mongo.CodeNewReplicaSetConfigurationIncompatible, "NewReplicaSetConfigurationIncompatible", "Our config version of 1 is no larger than the version on %s, which is %d", m.Host, o.config.Version)
		case o.hasData:
			return serverErr(n.host, mongo.CodeCannotInitializeNodeWithData, "CannotInitializeNodeWithData", "'%s' has data already, cannot initiate set.", m.Host)
		}
	}
	if len(failed) > 0 {
		return serverErr(n.host, mongo.CodeNodeNotFound, "NodeNotFound", "replSetInitiate quorum check failed because not all proposed set members responded affirmatively: %v", failed)
	}
	c := config.Clone()
	c.Term = 0
	if c.ProtocolVersion == 0 {
		c.ProtocolVersion = 1
	}
	if c.Settings == nil {
		c.Settings = &mongo.Settings{}
	}
	id := bson.NewObjectID()
	c.Settings.ReplicaSetID = &id
	r.install(c)
	r.fcv = mongo.Line(r.versionOf(n.host))
	r.settle()
	return nil
}

// Reconfig implements mongo.Admin.
func (r *ReplicaSet) Reconfig(ctx context.Context, host string, config mongo.Config, force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetReconfig")
	if err != nil {
		return err
	}
	if err := r.replEnabled(n, true); err != nil {
		return err
	}
	incompatible := func(format string, a ...any) error {
		return serverErr(n.host, mongo.CodeNewReplicaSetConfigurationIncompatible, "NewReplicaSetConfigurationIncompatible", format, a...)
	}
	cur := *n.config
	if !force {
		if n.state != mongo.StatePrimary {
			return serverErr(n.host, mongo.CodeNotWritablePrimary, "NotWritablePrimary", "New config is rejected :: caused by :: replSetReconfig should only be run on a writable PRIMARY. Current state %s;", n.state)
		}
		if !r.committed(cur) {
			return serverErr(n.host, mongo.CodeCurrentConfigNotCommittedYet, "CurrentConfigNotCommittedYet", "Cannot run replSetReconfig because the current config: {version: %d, term: %d} is not majority committed.", cur.Version, cur.Term)
		}
	}
	if config.ID != r.name {
		return serverErr(n.host, mongo.CodeInvalidReplicaSetConfig, "InvalidReplicaSetConfig", "Rejecting reconfig where new config set name differs from command line set name")
	}
	for _, m := range config.Members {
		if _, ok := m.Extra["newlyAdded"]; ok {
			return serverErr(n.host, mongo.CodeInvalidReplicaSetConfig, "InvalidReplicaSetConfig", "Cannot provide newlyAdded field to member config during reconfig.")
		}
	}
	if err := mongo.Validate(config); err != nil {
		return incompatible("%v", err)
	}
	if err := mongo.ValidateTransition(cur, config, force); err != nil {
		return incompatible("%v", err)
	}
	next := config.Clone()
	if force {
		next.Version = max(cur.Version, config.Version) + 10000
		next.Term = -1
	} else {
		next.Term = r.term
	}
	me := next.Member(n.host)
	if me == nil {
		return serverErr(n.host, mongo.CodeNodeNotFound, "NodeNotFound", "No host described in new configuration with {version: %d, term: %d} for replica set %s maps to this node", next.Version, next.Term, r.name)
	}
	if !force {
		if !me.Electable() {
			return serverErr(n.host, mongo.CodeNodeNotElectable, "NodeNotElectable", "This node, %s, with _id %d is not electable under the new configuration", n.host, me.ID)
		}
		if up := r.votersUp(next); up < next.MajorityVoteCount() {
			return serverErr(n.host, mongo.CodeNodeNotFound, "NodeNotFound", "Quorum check failed because not enough voting nodes responded; required %d but only %d voting nodes responded", next.MajorityVoteCount(), up)
		}
	}
	for _, m := range next.Members {
		if cur.Member(m.Host) == nil && m.Voter() && !m.ArbiterOnly && !force {
			r.pending[mongo.NormalizeHost(m.Host)] = true
		}
	}
	if force {
		nc := next.Clone()
		n.config = &nc
		if n.state == mongo.StatePrimary && (!me.Electable() || !me.Voter()) {
			n.state = mongo.StateSecondary
		}
	} else {
		r.install(next)
	}
	r.settle()
	return nil
}

// StepDown implements mongo.Admin.
func (r *ReplicaSet) StepDown(ctx context.Context, host string, seconds int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetStepDown")
	if err != nil {
		return err
	}
	if err := r.replEnabled(n, false); err != nil {
		return err
	}
	if n.state != mongo.StatePrimary {
		return serverErr(n.host, mongo.CodeNotWritablePrimary, "NotWritablePrimary", "not primary so can't step down")
	}
	caughtUp := false
	for _, m := range n.config.Members {
		o := r.nodes[mongo.NormalizeHost(m.Host)]
		if o != nil && o != n && o.up && o.state == mongo.StateSecondary && m.Electable() && m.Voter() && !o.frozen && o.optime.Compare(n.optime) >= 0 {
			caughtUp = true
		}
	}
	if !caughtUp {
		return serverErr(n.host, mongo.CodeExceededTimeLimit, "ExceededTimeLimit", "No electable secondaries caught up. Please use the replSetStepDown command with the argument {force: true} to force node to step down.")
	}
	n.state = mongo.StateSecondary
	r.elect(n)
	n.frozen = true // ineligible for the stepdown period
	r.settle()
	return nil
}

// Freeze implements mongo.Admin.
func (r *ReplicaSet) Freeze(ctx context.Context, host string, seconds int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetFreeze")
	if err != nil {
		return err
	}
	if err := r.replEnabled(n, false); err != nil {
		return err
	}
	if n.state == mongo.StatePrimary {
		return serverErr(n.host, mongo.CodeNotSecondary, "NotSecondary", "Cannot freeze node when primary or running for election, state: Primary")
	}
	n.frozen = seconds > 0
	r.settle()
	return nil
}

// Close implements mongo.Admin; later calls fail.
func (r *ReplicaSet) Close(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// Local implements mongo.Admin: the config the member holds (also when it is
// REMOVED) and its optime when it holds data.
func (r *ReplicaSet) Local(ctx context.Context, host string) (mongo.Local, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "find local")
	if err != nil {
		return mongo.Local{}, err
	}
	var out mongo.Local
	if n.config != nil {
		cfg := *n.config
		out.Config = &cfg
	}
	if n.hasData {
		out.LastOplog = n.optime
	}
	return out, nil
}
