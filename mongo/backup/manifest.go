// Package backup takes a logical backup of a replica-set member into an
// S3-compatible object store, and restores one into a replica set.
//
// A backup is the documents, options and indexes of every collection of
// every database but local and config, the users and roles
// (admin.system.users and admin.system.roles, as stored) and the views'
// definitions, read from one member while it keeps applying writes, plus
// the oplog entries the member applied while it was read. Restoring the
// documents and then replaying those entries gives the data as it was at
// the end of the window (mongodump --oplog's method).
// See docs/design/backup.md.
package backup

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/mongo"
)

// FormatVersion is the manifest's format; readers accept 1..FormatVersion.
// Format 2 added the users, roles and views: a build that reads only 1
// refuses such a backup rather than restore it without them.
const FormatVersion = 2

// ManifestName is the manifest's object under a backup's prefix. It is
// written last: a prefix without one holds an unfinished backup.
const ManifestName = "manifest.json"

// Position is an oplog position: its optime and the wall clock the member
// wrote with the entry.
type Position struct {
	// T and I are the entry's timestamp (seconds, increment).
	T    uint32    `json:"t"`
	I    uint32    `json:"i"`
	Term int64     `json:"term"`
	Wall time.Time `json:"wall,omitzero"`
}

// OpTime is the position's optime.
func (p Position) OpTime() mongo.OpTime {
	return mongo.OpTime{TS: bson.Timestamp{T: p.T, I: p.I}, T: p.Term}
}

// Timestamp is the position's oplog timestamp.
func (p Position) Timestamp() bson.Timestamp { return bson.Timestamp{T: p.T, I: p.I} }

// String is "ts(T,I) term N".
func (p Position) String() string { return fmt.Sprintf("ts(%d,%d) term %d", p.T, p.I, p.Term) }

// Manifest describes one finished backup.
type Manifest struct {
	Format int `json:"format"`
	// Cluster is the Mgors (namespace/name) the backup was taken of, and
	// Member the host that was read.
	Cluster string `json:"cluster"`
	Member  string `json:"member"`
	// Started and Finished are the dump's own clock.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Start is the member's newest oplog entry before the first read, End
	// its newest after the last: the documents hold some state inside
	// [Start, End], and replaying Oplog brings them to End.
	Start       Position     `json:"start"`
	End         Position     `json:"end"`
	Collections []Collection `json:"collections"`
	// Users and Roles are admin.system.users and admin.system.roles, every
	// document as mongod stores it (a user's SCRAM credentials, never a
	// password); empty in a format 1 backup.
	Users Auth `json:"users"`
	Roles Auth `json:"roles"`
	// Views are the views' definitions, database by database.
	Views []View `json:"views,omitempty"`
	// Skipped are the namespaces not dumped, with the reason.
	Skipped []Skipped `json:"skipped,omitempty"`
	Oplog   Oplog     `json:"oplog"`
	// Size is the bytes of every object the manifest names.
	Size int64 `json:"size"`
}

// Collection is one dumped collection.
type Collection struct {
	DB   string `json:"db"`
	Name string `json:"name"`
	// Metadata is the key of its options and indexes (canonical extended
	// JSON, mongodump's metadata.json shape).
	Metadata  string   `json:"metadata"`
	Parts     []string `json:"parts"`
	Documents int64    `json:"documents"`
	Bytes     int64    `json:"bytes"`
}

// NS is db.name.
func (c Collection) NS() string { return c.DB + "." + c.Name }

// Auth is one of the authorization collections, admin.system.users or
// admin.system.roles: its documents in Parts, as a collection's are.
type Auth struct {
	Parts     []string `json:"parts"`
	Documents int64    `json:"documents"`
	Bytes     int64    `json:"bytes"`
}

// View is a view's definition: what listCollections says of it.
type View struct {
	DB   string `json:"db"`
	Name string `json:"name"`
	// Options are its viewOn, pipeline and collation, in canonical extended
	// JSON, as listCollections gives them (the create command's fields).
	Options json.RawMessage `json:"options"`
}

// NS is db.name.
func (v View) NS() string { return v.DB + "." + v.Name }

// Skipped is a namespace left out of the backup.
type Skipped struct {
	NS     string `json:"ns"`
	Reason string `json:"reason"`
}

// Oplog is the oplog window's entries: (Start, End] in Parts.
type Oplog struct {
	Parts   []string `json:"parts"`
	Entries int64    `json:"entries"`
	Bytes   int64    `json:"bytes"`
}

// metadata is a collection's metadata object, as mongodump writes it.
type metadata struct {
	Options bson.Raw   `json:"options"`
	Indexes []bson.Raw `json:"indexes"`
	UUID    string     `json:"uuid,omitempty"`
	Name    string     `json:"collectionName"`
	Type    string     `json:"type"`
}

// MarshalJSON writes options and indexes as canonical extended JSON.
func (m metadata) MarshalJSON() ([]byte, error) {
	ext := func(r bson.Raw) (json.RawMessage, error) {
		if len(r) == 0 {
			return json.RawMessage("{}"), nil
		}
		b, err := bson.MarshalExtJSON(r, true, false)
		return json.RawMessage(b), err
	}
	opts, err := ext(m.Options)
	if err != nil {
		return nil, err
	}
	idx := make([]json.RawMessage, 0, len(m.Indexes))
	for _, r := range m.Indexes {
		b, err := ext(r)
		if err != nil {
			return nil, err
		}
		idx = append(idx, b)
	}
	return json.Marshal(struct {
		Options json.RawMessage   `json:"options"`
		Indexes []json.RawMessage `json:"indexes"`
		UUID    string            `json:"uuid,omitempty"`
		Name    string            `json:"collectionName"`
		Type    string            `json:"type"`
	}{opts, idx, m.UUID, m.Name, m.Type})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (m *metadata) UnmarshalJSON(b []byte) error {
	var raw struct {
		Options json.RawMessage   `json:"options"`
		Indexes []json.RawMessage `json:"indexes"`
		UUID    string            `json:"uuid"`
		Name    string            `json:"collectionName"`
		Type    string            `json:"type"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var opts bson.Raw
	if err := bson.UnmarshalExtJSON(raw.Options, true, &opts); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	m.Options, m.UUID, m.Name, m.Type, m.Indexes = opts, raw.UUID, raw.Name, raw.Type, nil
	for _, r := range raw.Indexes {
		var ix bson.Raw
		if err := bson.UnmarshalExtJSON(r, true, &ix); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		m.Indexes = append(m.Indexes, ix)
	}
	return nil
}

// Keys name a backup's objects under its prefix:
//
//	<prefix>/manifest.json
//	<prefix>/data/<db>/<collection>/metadata.json
//	<prefix>/data/<db>/<collection>/<n>.bson   documents, concatenated BSON
//	<prefix>/oplog/<n>.bson                    the window's oplog entries
//
// Database and collection names are path-escaped (a collection name may
// hold '/').
func dataKey(prefix, db, coll, name string) string {
	return path.Join(prefix, "data", url.PathEscape(db), url.PathEscape(coll), name)
}

func partName(n int) string { return fmt.Sprintf("%05d.bson", n) }

func oplogKey(prefix string, n int) string { return path.Join(prefix, "oplog", partName(n)) }

func manifestKey(prefix string) string { return path.Join(prefix, ManifestName) }
