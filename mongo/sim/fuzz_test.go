package sim

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

func opMsg(doc bson.D) []byte {
	return EncodeMsg(1, 0, 0, mustRaw(doc))
}

func opQuery(doc bson.D) []byte {
	idx, b := wiremessage.AppendHeaderStart(nil, 1, 0, wiremessage.OpQuery) //nolint:staticcheck // the legacy handshake
	b = wiremessage.AppendQueryFlags(b, 0)
	b = wiremessage.AppendQueryFullCollectionName(b, "admin.$cmd")
	b = wiremessage.AppendQueryNumberToSkip(b, 0)
	b = wiremessage.AppendQueryNumberToReturn(b, -1)
	b = append(b, mustRaw(doc)...)
	binary.LittleEndian.PutUint32(b[idx:], uint32(len(b)-int(idx)))
	return b
}

// FuzzWireMessage: ParseMessage never panics, whatever the bytes.
func FuzzWireMessage(f *testing.F) {
	f.Add(opMsg(bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}}))
	f.Add(opQuery(bson.D{{Key: "isMaster", Value: 1}, {Key: "helloOk", Value: true}}))
	f.Add(opMsg(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 1}}}}, {Key: "$db", Value: "t"}}))
	f.Add([]byte{16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xdd, 7, 0, 0})
	f.Add([]byte("garbage that is not a message"))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ParseMessage(b)
		if err == nil {
			_ = req.Name()
			_ = req.DB()
			_, _ = req.Docs("documents")
		}
	})
}

// fuzzNode is a standalone node on a temp dbpath, enough to run commands.
func fuzzNode(f *testing.F) *Node {
	cfg := DefaultConfig()
	cfg.DBPath = f.TempDir()
	cfg.ReplSet = "rs0"
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = n.store.Close() })
	return n
}

type nopConn struct{ net.Conn }

func (nopConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (nopConn) Close() error         { return nil }

// FuzzCommand: any command document is answered (ok or error) without a
// panic escaping the connection.
func FuzzCommand(f *testing.F) {
	n := fuzzNode(f)
	for _, d := range []bson.D{
		{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: bson.NewObjectID()}, {Key: "counter", Value: int64(0)}}}, {Key: "maxAwaitTimeMS", Value: 1}},
		{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: "127.0.0.1:1"}}}}}}},
		{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}}}}}},
		{{Key: "getParameter", Value: "*"}},
		{{Key: "replSetGetStatus", Value: 1}},
		{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "payload", Value: bson.Binary{Data: []byte("n,,n=u,r=abc")}}},
		{{Key: "usersInfo", Value: bson.A{"x", 3}}},
	} {
		f.Add([]byte(mustRaw(append(d, bson.E{Key: "$db", Value: "admin"}))))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc := bson.Raw(b)
		if doc.Validate() != nil {
			return
		}
		name := (&Request{Body: doc}).Name()
		switch name {
		case "shutdown", "replSetInitiate", "replSetStepUp", "replSetReconfig", "replSetHeartbeat", "replSetStepDown":
			return // these talk to the network or stop the process
		}
		c := &conn{n: n, nc: nopConn{}, id: 1, local: true}
		done := make(chan struct{})
		go func() {
			defer close(done)
			reply, _ := c.handle(&Request{Body: doc})
			if reply != nil {
				if _, err := bson.Marshal(reply); err != nil {
					t.Errorf("unencodable reply for %s: %v", name, err)
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("command %s did not answer", name)
		}
	})
}
