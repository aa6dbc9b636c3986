package sim

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Too stale, as mongod: a sync source whose oldest entry is after our
// newest cannot feed us; it is denylisted for a minute and another is
// tried. When none is left the member is too stale to catch up: it enters
// maintenance mode (RECOVERING) and stays there until some source holds its
// position again (in practice never: the member needs a resync, i.e. an
// initial sync on an emptied dbpath).

const tooStaleDenylist = time.Minute

type staleState struct {
	denylist map[string]time.Time
	tooStale bool
}

func (s *staleState) denied(host string, now time.Time) bool {
	until, ok := s.denylist[host]
	return ok && now.Before(until)
}

// syncSourceTooStaleLocked handles a source's "too stale" answer to a fetch.
func (n *Node) syncSourceTooStaleLocked(src string, lastFetched, earliest OpTime) {
	now := time.Now()
	if n.stale.denylist == nil {
		n.stale.denylist = map[string]time.Time{}
	}
	until := now.Add(tooStaleDenylist)
	n.stale.denylist[src] = until
	n.logS("W", "REPL", 5579700, "Oplog fetcher discovered we are too stale to sync from sync source. Denylisting sync source", func(e *zerolog.Event) {
		e.Str("syncSource", src).Int64("denylistDurationMillis", tooStaleDenylist.Milliseconds())
	})
	n.logI("REPL", 5579708, "We are too stale to use candidate as a sync source. Denylisting this sync source because our last fetched timestamp is before their earliest timestamp", func(e *zerolog.Event) {
		e.Str("candidate", src).Str("lastOpTimeFetchedTimestamp", tsString(lastFetched)).Str("remoteEarliestOpTimeTimestamp", tsString(earliest)).
			Int("denylistDurationMinutes", 1).Time("denylistUntil", until)
	})
	if n.syncSourceLocked() != "" || n.stale.tooStale {
		return
	}
	n.stale.tooStale = true
	n.logS("E", "REPL", 21126, "Too stale to catch up. Entering maintenance mode. See http://dochub.mongodb.org/core/resyncingaverystalereplicasetmember", func(e *zerolog.Event) {
		e.Str("lastOpTimeFetched", tsString(lastFetched)).Str("earliestOpTimeSeen", tsString(earliest))
	})
	if n.state != StateRecovering {
		n.state = StateRecovering
		n.bumpTopologyLocked()
		n.logI("REPL", 21358, "Replica set state transition", func(e *zerolog.Event) { e.Str("newState", "RECOVERING") })
	}
}

// caughtUpAgainLocked leaves maintenance mode once a source feeds us again.
func (n *Node) caughtUpAgainLocked() {
	if n.stale.tooStale {
		n.stale.tooStale = false
		n.logI("REPL", 21010, "Leaving maintenance mode: a sync source holds our position again", nil)
	}
}

// infoMessageLocked is our replSetGetStatus infoMessage.
func (n *Node) infoMessageLocked() string {
	if n.stale.tooStale {
		return "Could not find member to sync from"
	}
	return ""
}

func tsString(o OpTime) string {
	return fmt.Sprintf("Timestamp(%d, %d)", o.TS.T, o.TS.I)
}

// fetchedTooStale handles a "too stale" answer: during initial sync the
// attempt fails (its begin point left the source's oplog), otherwise the
// source is denylisted.
func (n *Node) fetchedTooStale(src string, lastFetched, earliest OpTime) {
	n.mu.Lock()
	isync := n.state == StateStartup2 && n.isync != nil && n.isync.cloned
	if !isync {
		n.syncSourceTooStaleLocked(src, lastFetched, earliest)
	}
	n.mu.Unlock()
	if isync {
		n.initialSyncFailed(src, 0, time.Now(), fmt.Errorf("OplogStartMissing: our last optime fetched %s is before %s's earliest %s", tsString(lastFetched), src, tsString(earliest)))
	}
}
