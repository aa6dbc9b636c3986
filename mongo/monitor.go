package mongo

import (
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
)

// DefaultHeartbeat is the driver's heartbeat frequency on the connections
// that watch the members (Options.Heartbeat). Members that stream their
// topology (MongoDB 4.4+, mongod-sim) report a change at once whatever the
// frequency: it bounds how long a member that went silent without closing
// its connections (a partition, a hung process) goes unnoticed, and it is
// the cost of watching: per member, one awaited hello returning every
// heartbeat and one round-trip hello every heartbeat, 12 a minute at 10 s.
const DefaultHeartbeat = 10 * time.Second

// idleHeartbeat is the heartbeat frequency of the authenticated
// connections, which nobody watches: a failed command marks the member
// unknown and asks the driver for an immediate check anyway, so a slow
// heartbeat there costs nothing but is one hello a minute, not six.
const idleHeartbeat = time.Minute

// monitor turns the driver's server description changes of one member's
// unauthenticated connection into Options.Changed calls. It runs on the
// driver's monitoring goroutines.
type monitor struct {
	host    string
	changed func(host string)

	mu sync.Mutex
	// opening is true until the first command on the connection returned:
	// the description it learns meanwhile is what that command reports, not
	// news.
	opening bool
}

func newMonitor(host string, changed func(string)) *monitor {
	return &monitor{host: host, changed: changed, opening: true}
}

// opened ends the opening (runOnce calls it after a command returned).
func (m *monitor) opened() {
	m.mu.Lock()
	m.opening = false
	m.mu.Unlock()
}

func (m *monitor) serverMonitor() *event.ServerMonitor {
	// With a direct connection the topology is Single, one server: its
	// TopologyDescriptionChanged repeats ServerDescriptionChanged.
	return &event.ServerMonitor{ServerDescriptionChanged: func(e *event.ServerDescriptionChangedEvent) {
		m.mu.Lock()
		opening := m.opening
		m.mu.Unlock()
		if !opening && moved(e.PreviousDescription, e.NewDescription) {
			m.changed(m.host)
		}
	}}
}

// moved says whether a member's server description changed in a way the
// operator acts on: its kind (primary, secondary, arbiter, other, unknown:
// gone or back), the set and config version it holds, the primary it names
// or the election that made it primary. A changed round-trip time, last
// write or error text is not news.
func moved(prev, next event.ServerDescription) bool {
	return prev.Kind != next.Kind || prev.SetName != next.SetName || prev.SetVersion != next.SetVersion ||
		prev.Primary != next.Primary || prev.ElectionID != next.ElectionID
}
