package sim

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Authentication: SCRAM-SHA-1/256 conversations (saslStart/saslContinue,
// speculative authentication in hello) and the credentials they check.

type saslConv struct {
	id       int32
	mech     string
	db       string
	conv     scramConv
	skipLast bool
	done     bool
}

var convIDs struct {
	sync.Mutex
	n int32
}

func saltedCreds(fcn scram.HashGeneratorFcn, user, pwd string, iters int, sha1 bool) (bson.D, error) {
	salt := make([]byte, 16)
	if !sha1 {
		salt = make([]byte, 28)
	}
	_, _ = rand.Read(salt)
	var client *scram.Client
	var err error
	if sha1 {
		client, err = fcn.NewClientUnprepped(user, mongoPasswordDigest(user, pwd), "")
	} else {
		client, err = fcn.NewClient(user, pwd, "")
	}
	if err != nil {
		return nil, err
	}
	sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "iterationCount", Value: int32(iters)}, {Key: "salt", Value: base64.StdEncoding.EncodeToString(salt)},
		{Key: "storedKey", Value: base64.StdEncoding.EncodeToString(sc.StoredKey)}, {Key: "serverKey", Value: base64.StdEncoding.EncodeToString(sc.ServerKey)}}, nil
}

func mongoPasswordDigest(user, pwd string) string {
	h := md5.Sum([]byte(user + ":mongo:" + pwd))
	return hex.EncodeToString(h[:])
}

func buildCredentials(user, pwd string, mechs []string) (bson.D, error) {
	var out bson.D
	for _, m := range mechs {
		switch m {
		case "SCRAM-SHA-1":
			d, err := saltedCreds(scram.SHA1, user, pwd, 10000, true)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: m, Value: d})
		case "SCRAM-SHA-256":
			d, err := saltedCreds(scram.SHA256, user, pwd, 15000, false)
			if err != nil {
				return nil, cerr(2, "Error preparing SCRAM-SHA-256 credentials: %v", err)
			}
			out = append(out, bson.E{Key: m, Value: d})
		default:
			return nil, cerr(2, "Unknown auth mechanism '%s'", m)
		}
	}
	return out, nil
}

func (n *Node) lookupCreds(mech, db string) scram.CredentialLookup {
	return n.lookupKeyCreds(mech, db, 0)
}

// lookupKeyCreds is lookupCreds with __system@local opened by the key-th key
// of the keyfile (internal_auth.go).
func (n *Node) lookupKeyCreds(mech, db string, key int) scram.CredentialLookup {
	return func(user string) (scram.StoredCredentials, error) {
		if user == "__system" && db == "local" && n.keyFile != "" {
			cacheKey := fmt.Sprintf("%s/%d", mech, key)
			if v, ok := n.systemCreds.Load(cacheKey); ok {
				return v.(scram.StoredCredentials), nil
			}
			var client *scram.Client
			var err error
			iters := 15000
			if mech == "SCRAM-SHA-1" {
				iters = 10000
				client, err = scram.SHA1.NewClientUnprepped(user, mongoPasswordDigest(user, n.keys[key]), "")
			} else {
				client, err = scram.SHA256.NewClient(user, n.keys[key], "")
			}
			if err != nil {
				return scram.StoredCredentials{}, err
			}
			sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: n.systemSalt(mech), Iters: iters})
			if err != nil {
				return scram.StoredCredentials{}, err
			}
			n.systemCreds.Store(cacheKey, sc)
			return sc, nil
		}
		doc := n.userDoc(db, user)
		if doc == nil {
			return scram.StoredCredentials{}, fmt.Errorf("user not found")
		}
		cd, ok := doc.Lookup("credentials", mech).DocumentOK()
		if !ok {
			return scram.StoredCredentials{}, fmt.Errorf("no credentials")
		}
		it, _ := cd.Lookup("iterationCount").AsInt64OK()
		s, _ := cd.Lookup("salt").StringValueOK()
		sk, _ := cd.Lookup("storedKey").StringValueOK()
		svk, _ := cd.Lookup("serverKey").StringValueOK()
		salt, _ := base64.StdEncoding.DecodeString(s)
		stored, _ := base64.StdEncoding.DecodeString(sk)
		server, _ := base64.StdEncoding.DecodeString(svk)
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: int(it)}, StoredKey: stored, ServerKey: server}, nil
	}
}

// userMechanisms answers hello's saslSupportedMechs: "db.user".
func (n *Node) userMechanisms(s string) bson.A {
	db, user, ok := strings.Cut(s, ".")
	if !ok {
		return nil
	}
	if user == "__system" && db == "local" && n.keyFile != "" {
		return bson.A{"SCRAM-SHA-1", "SCRAM-SHA-256"}
	}
	doc := n.userDoc(db, user)
	if doc == nil {
		return nil
	}
	out := bson.A{}
	for _, m := range []string{"SCRAM-SHA-1", "SCRAM-SHA-256"} {
		if _, err := doc.LookupErr("credentials", m); err == nil {
			out = append(out, m)
		}
	}
	return out
}

func (c *conn) saslStep(req bson.Raw, db string, start bool) (bson.D, error) {
	fail := func() (bson.D, error) {
		c.sasl = nil
		c.n.logI("ACCESS", 20249, "Authentication failed", func(e *zerolog.Event) { e.Str("db", db) })
		return nil, cerr(18, "Authentication failed.")
	}
	_, payload, _ := req.Lookup("payload").BinaryOK()
	if p, ok := req.Lookup("payload").StringValueOK(); ok {
		payload = []byte(p)
	}
	if start {
		mech, _ := req.Lookup("mechanism").StringValueOK()
		var fcn scram.HashGeneratorFcn
		switch mech {
		case "SCRAM-SHA-1":
			fcn = scram.SHA1
		case "SCRAM-SHA-256":
			fcn = scram.SHA256
		default:
			return nil, cerr(2, "Received authentication for mechanism %s which is not enabled", mech)
		}
		var conv scramConv
		if db == "local" && len(c.n.keys) > 1 {
			ak, err := newAnyKeyConv(c.n, fcn, mech, db)
			if err != nil {
				return fail()
			}
			conv = ak
		} else {
			srv, err := fcn.NewServer(c.n.lookupCreds(mech, db))
			if err != nil {
				return fail()
			}
			conv = srv.NewConversation()
		}
		convIDs.Lock()
		convIDs.n++
		id := convIDs.n
		convIDs.Unlock()
		skip, _ := req.Lookup("options", "skipEmptyExchange").BooleanOK()
		c.sasl = &saslConv{id: id, mech: mech, db: db, conv: conv, skipLast: skip}
	}
	s := c.sasl
	if s == nil {
		return nil, cerr(17, "No SASL session state found")
	}
	if s.done {
		// the empty final exchange without skipEmptyExchange
		c.finishAuth(s)
		return bson.D{{Key: "conversationId", Value: s.id}, {Key: "done", Value: true}, {Key: "payload", Value: bson.Binary{Data: []byte{}}}}, nil
	}
	out, err := s.conv.Step(string(payload))
	if err != nil {
		return fail()
	}
	if s.conv.Done() {
		if !s.conv.Valid() || !c.n.restrictionsMet(s.db, s.conv.Username(), c.nc.RemoteAddr(), c.nc.LocalAddr()) {
			return fail()
		}
		if e := c.reauthentication(s.conv.Username(), s.db); e != nil {
			c.sasl = nil
			return nil, e
		}
		if s.skipLast {
			c.finishAuth(s)
			return bson.D{{Key: "conversationId", Value: s.id}, {Key: "done", Value: true}, {Key: "payload", Value: bson.Binary{Data: []byte(out)}}}, nil
		}
		s.done = true
	}
	return bson.D{{Key: "conversationId", Value: s.id}, {Key: "done", Value: false}, {Key: "payload", Value: bson.Binary{Data: []byte(out)}}}, nil
}

func (c *conn) finishAuth(s *saslConv) {
	user := s.conv.Username()
	c.sasl = nil
	if user == "__system" && s.db == "local" {
		c.internal.Store(true)
		c.users = []authedUser{{user: "__system", db: "local"}}
		c.authzCache = nil
		return
	}
	c.users = []authedUser{{user: user, db: s.db}}
	c.authzCache = nil
	c.n.logI("ACCESS", 5286306, "Successfully authenticated", func(e *zerolog.Event) {
		e.Str("user", user).Str("db", s.db).Str("mechanism", s.mech)
	})
}

func (c *conn) cmdSaslStart(req *Request) (bson.D, error) {
	return c.saslStep(req.Body, req.DB(), true)
}

func (c *conn) cmdSaslContinue(req *Request) (bson.D, error) {
	return c.saslStep(req.Body, req.DB(), false)
}

func (c *conn) cmdAuthenticate(req *Request) (bson.D, error) {
	return nil, cerr(2, "Auth mechanism not specified")
}

func (c *conn) cmdLogout(*Request) (bson.D, error) {
	c.users = nil
	c.authzCache = nil
	return bson.D{}, nil
}

// speculativeAuth runs the first SCRAM step inside hello.
func (c *conn) speculativeAuth(sa bson.Raw, helloDB string) bson.D {
	db, _ := sa.Lookup("db").StringValueOK()
	if db == "" {
		db = helloDB
	}
	if _, ok := sa.Lookup("mechanism").StringValueOK(); !ok {
		return nil
	}
	r, err := c.saslStep(sa, db, true)
	if err != nil {
		return nil
	}
	return r
}

// reauthentication is mongod's rule for a second authentication on one
// connection: the same user again is fine, anyone else is refused.
func (c *conn) reauthentication(user, db string) *CmdError {
	if len(c.users) == 0 || c.isUser(user, db) {
		return nil
	}
	prev := c.users[0]
	if prev.db == db {
		return cerr(5626701, "Each client connection may only be authenticated once. Previously authenticated as: %s@%s", prev.user, prev.db)
	}
	return cerr(5626702, "Client has attempted to authenticate on multiple databases.Already authenticated as: %s@%s", prev.user, prev.db)
}
