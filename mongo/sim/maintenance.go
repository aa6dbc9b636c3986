package sim

import (
	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdReplSetMaintenance counts maintenance tasks as mongod does: while any is
// active a secondary is RECOVERING (no reads, no elections) and keeps syncing.
func (c *conn) cmdReplSetMaintenance(req *Request) (bson.D, error) {
	n := c.n
	activate, ok := req.Body.Lookup("replSetMaintenance").BooleanOK()
	if !ok {
		num, isNum := numberOK(req.Body.Lookup("replSetMaintenance"))
		activate = isNum && num != 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cfg.ReplSet == "" {
		return nil, cerr(76, "node needs to be a replica set member to use this command")
	}
	if e := n.checkStatusLocked(); e != nil {
		return nil, e
	}
	if n.state == StatePrimary {
		return nil, cerr(95, "primaries can't modify maintenance mode")
	}
	if activate {
		n.logI("REPL", 21350, "Going into maintenance mode", func(e *zerolog.Event) { e.Int("otherMaintenanceModeTasksInProgress", n.maintTasks) })
		n.maintTasks++
		if n.state == StateSecondary {
			n.state = StateRecovering
			n.bumpTopologyLocked()
		}
		return bson.D{}, nil
	}
	if n.maintTasks == 0 {
		n.logS("W", "REPL", 21411, "Attempted to leave maintenance mode but it is not currently active", nil)
		return nil, cerr(96, "already out of maintenance mode")
	}
	n.maintTasks--
	n.logI("REPL", 21351, "Leaving maintenance mode", func(e *zerolog.Event) { e.Int("otherMaintenanceModeTasksInProgress", n.maintTasks) })
	if n.maintTasks == 0 && n.state == StateRecovering {
		n.state = StateSecondary
		n.bumpTopologyLocked()
	}
	return bson.D{}, nil
}
