package backup

import (
	"cmp"
	"errors"
	"slices"

	"github.com/mgors/operator/mongo"
)

// ErrNoSource is returned when no member can be read: none is a healthy
// data-bearing member.
var ErrNoSource = errors.New("backup: no healthy data-bearing member to read")

// Source chooses the member a backup reads, from replSetGetStatus and
// the config: never the primary while a healthy secondary exists, since the
// dump's reads would then cost the writers. Among the healthy secondaries
// (up, SECONDARY, building indexes), a hidden or priority-0 one first (it
// serves no clients and will not be elected mid-dump), then the newest
// optime (the shortest lag, so the shortest window to replay), then the
// name. Without a healthy secondary, the primary; with neither, ErrNoSource.
func Source(st *mongo.Status, cfg mongo.Config) (string, error) {
	if st == nil {
		return "", ErrNoSource
	}
	byHost := map[string]mongo.Member{}
	for _, m := range cfg.Members {
		byHost[mongo.NormalizeHost(m.Host)] = m
	}
	var secondaries []mongo.MemberStatus
	primary := ""
	for _, m := range st.Members {
		c, inConfig := byHost[mongo.NormalizeHost(m.Name)]
		if !m.Up() || !inConfig || c.ArbiterOnly || !c.BuildIndexes {
			continue
		}
		switch m.State {
		case mongo.StateSecondary:
			secondaries = append(secondaries, m)
		case mongo.StatePrimary:
			primary = m.Name
		}
	}
	if len(secondaries) == 0 {
		if primary == "" {
			return "", ErrNoSource
		}
		return primary, nil
	}
	quiet := func(m mongo.MemberStatus) int {
		c := byHost[mongo.NormalizeHost(m.Name)]
		if c.Hidden || c.Priority == 0 {
			return 0
		}
		return 1
	}
	slices.SortFunc(secondaries, func(a, b mongo.MemberStatus) int {
		return cmp.Or(cmp.Compare(quiet(a), quiet(b)), b.Optime.Compare(a.Optime), cmp.Compare(a.Name, b.Name))
	})
	return secondaries[0].Name, nil
}
