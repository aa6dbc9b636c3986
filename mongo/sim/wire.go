package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

// Limits mongod advertises in hello and enforces.
const (
	maxBSONSize       = 16 * 1024 * 1024
	maxMessageSize    = 48000000
	maxWriteBatchSize = 100000
)

// Request is one command as received: the body document, kind-1 document
// sequences, and how the reply must be framed.
type Request struct {
	RequestID  int32
	Legacy     bool // OP_QUERY: reply with OP_REPLY
	MoreToCome bool // w:0 OP_MSG: send no reply
	Exhaust    bool
	Body       bson.Raw
	Seqs       map[string][]bson.Raw
}

// Name is the command name: the first key of the body.
func (r *Request) Name() string {
	e, err := r.Body.IndexErr(0)
	if err != nil {
		return ""
	}
	return e.Key()
}

// DB is the database the command targets ($db, or the OP_QUERY namespace).
func (r *Request) DB() string {
	if v, err := r.Body.LookupErr("$db"); err == nil {
		if s, ok := v.StringValueOK(); ok {
			return s
		}
	}
	return "admin"
}

// Docs returns the documents of an array field, from a kind-1 section
// when the driver sent one, else from the body.
func (r *Request) Docs(field string) ([]bson.Raw, error) {
	if d, ok := r.Seqs[field]; ok {
		return d, nil
	}
	v := r.Body.Lookup(field)
	if v.Type == 0 {
		return nil, nil // absent: no documents
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, fmt.Errorf("BSON field '%s' is the wrong type '%s', expected type 'array'", field, typeName(v.Type))
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	out := make([]bson.Raw, 0, len(vals))
	for _, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("BSON field '%s' element is not an object", field)
		}
		out = append(out, d)
	}
	return out, nil
}

// errBadMessage marks a message that must close its connection.
var errBadMessage = errors.New("bad message")

// ReadMessage reads one length-prefixed wire message, refusing lengths
// outside mongod's limits before allocating.
func ReadMessage(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.LittleEndian.Uint32(hdr[:]))
	if n < 16 || n > maxMessageSize {
		return nil, fmt.Errorf("%w: message length %d out of range", errBadMessage, n)
	}
	msg := make([]byte, n)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[4:]); err != nil {
		return nil, err
	}
	return msg, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ParseMessage decodes OP_MSG and OP_QUERY; any other opcode or malformed
// content is an error, on which the caller closes the connection.
func ParseMessage(msg []byte) (*Request, error) {
	length, reqID, _, op, rem, ok := wiremessage.ReadHeader(msg)
	if !ok || int(length) != len(msg) {
		return nil, fmt.Errorf("%w: bad header", errBadMessage)
	}
	req := &Request{RequestID: reqID}
	switch op {
	case wiremessage.OpMsg:
		flags, rest, ok := wiremessage.ReadMsgFlags(rem)
		if !ok {
			return nil, fmt.Errorf("%w: short OP_MSG", errBadMessage)
		}
		const known = wiremessage.ChecksumPresent | wiremessage.MoreToCome | wiremessage.ExhaustAllowed
		if flags&0xffff&^known != 0 {
			return nil, fmt.Errorf("%w: Unrecognized required flags in OP_MSG", errBadMessage)
		}
		if flags&wiremessage.ChecksumPresent != 0 {
			if len(rest) < 4 {
				return nil, fmt.Errorf("%w: missing checksum", errBadMessage)
			}
			want := binary.LittleEndian.Uint32(rest[len(rest)-4:])
			if crc32.Checksum(msg[:len(msg)-4], castagnoli) != want {
				return nil, fmt.Errorf("%w: checksum mismatch", errBadMessage)
			}
			rest = rest[:len(rest)-4]
		}
		req.MoreToCome = flags&wiremessage.MoreToCome != 0
		req.Exhaust = flags&wiremessage.ExhaustAllowed != 0
		for len(rest) > 0 {
			st, r2, ok := wiremessage.ReadMsgSectionType(rest)
			if !ok {
				return nil, fmt.Errorf("%w: bad section", errBadMessage)
			}
			switch st {
			case wiremessage.SingleDocument:
				if req.Body != nil {
					return nil, fmt.Errorf("%w: more than one body section", errBadMessage)
				}
				doc, r3, ok := wiremessage.ReadMsgSectionSingleDocument(r2)
				if !ok {
					return nil, fmt.Errorf("%w: bad body section", errBadMessage)
				}
				req.Body, rest = bson.Raw(doc), r3
			case wiremessage.DocumentSequence:
				id, docs, r3, ok := wiremessage.ReadMsgSectionDocumentSequence(r2)
				if !ok {
					return nil, fmt.Errorf("%w: bad document sequence", errBadMessage)
				}
				if req.Seqs == nil {
					req.Seqs = map[string][]bson.Raw{}
				}
				for _, d := range docs {
					if err := bson.Raw(d).Validate(); err != nil {
						return nil, fmt.Errorf("%w: %w", errBadMessage, err)
					}
					req.Seqs[id] = append(req.Seqs[id], bson.Raw(d))
				}
				rest = r3
			default:
				return nil, fmt.Errorf("%w: unknown section kind %d", errBadMessage, st)
			}
		}
		if req.Body == nil {
			return nil, fmt.Errorf("%w: OP_MSG without body", errBadMessage)
		}
	case wiremessage.OpQuery: //nolint:staticcheck // OP_QUERY is the legacy handshake drivers still open with
		req.Legacy = true
		_, r2, ok := wiremessage.ReadQueryFlags(rem) //nolint:staticcheck // OP_QUERY is the legacy handshake drivers still open with
		if !ok {
			return nil, fmt.Errorf("%w: short OP_QUERY", errBadMessage)
		}
		ns, r3, ok := wiremessage.ReadQueryFullCollectionName(r2) //nolint:staticcheck // OP_QUERY is the legacy handshake drivers still open with
		if !ok {
			return nil, fmt.Errorf("%w: bad namespace", errBadMessage)
		}
		_, r4, ok := wiremessage.ReadQueryNumberToSkip(r3) //nolint:staticcheck // OP_QUERY is the legacy handshake drivers still open with
		if !ok {
			return nil, fmt.Errorf("%w: short OP_QUERY", errBadMessage)
		}
		_, r5, ok := wiremessage.ReadQueryNumberToReturn(r4) //nolint:staticcheck // OP_QUERY is the legacy handshake drivers still open with
		if !ok {
			return nil, fmt.Errorf("%w: short OP_QUERY", errBadMessage)
		}
		q, _, ok := wiremessage.ReadQueryQuery(r5) //nolint:staticcheck // OP_QUERY is the legacy handshake drivers still open with
		if !ok {
			return nil, fmt.Errorf("%w: bad query document", errBadMessage)
		}
		body := bson.Raw(q)
		if err := body.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", errBadMessage, err)
		}
		if inner, err := body.LookupErr("$query"); err == nil {
			if d, ok := inner.DocumentOK(); ok {
				body = d
			}
		}
		db, _, _ := strings.Cut(ns, ".")
		// OP_QUERY carries the database in the namespace; add $db for uniform handling.
		req.Body = appendField(body, "$db", db)
		return req, nil
	default:
		return nil, fmt.Errorf("%w: unsupported opcode %d", errBadMessage, op)
	}
	if err := req.Body.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadMessage, err)
	}
	return req, nil
}

// appendField returns doc with key set (if absent) to a string value.
func appendField(doc bson.Raw, key, val string) bson.Raw {
	if _, err := doc.LookupErr(key); err == nil {
		return doc
	}
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		return doc
	}
	d = append(d, bson.E{Key: key, Value: val})
	out, err := bson.Marshal(d)
	if err != nil {
		return doc
	}
	return out
}

// EncodeMsg frames doc as an OP_MSG reply (or request) with one body section.
func EncodeMsg(requestID, responseTo int32, flags wiremessage.MsgFlag, doc []byte) []byte {
	idx, b := wiremessage.AppendHeaderStart(nil, requestID, responseTo, wiremessage.OpMsg)
	b = wiremessage.AppendMsgFlags(b, flags)
	b = wiremessage.AppendMsgSectionType(b, wiremessage.SingleDocument)
	b = append(b, doc...)
	binary.LittleEndian.PutUint32(b[idx:], uint32(len(b)-int(idx)))
	return b
}

// EncodeReply frames doc as the OP_REPLY answering a legacy OP_QUERY,
// with AwaitCapable set as mongod does.
func EncodeReply(requestID, responseTo int32, doc []byte) []byte {
	idx, b := wiremessage.AppendHeaderStart(nil, requestID, responseTo, wiremessage.OpReply)
	b = wiremessage.AppendReplyFlags(b, wiremessage.AwaitCapable)
	b = wiremessage.AppendReplyCursorID(b, 0)
	b = wiremessage.AppendReplyStartingFrom(b, 0)
	b = wiremessage.AppendReplyNumberReturned(b, 1)
	b = append(b, doc...)
	binary.LittleEndian.PutUint32(b[idx:], uint32(len(b)-int(idx)))
	return b
}

func typeName(t bson.Type) string {
	switch t {
	case bson.TypeDouble:
		return "double"
	case bson.TypeString:
		return "string"
	case bson.TypeEmbeddedDocument:
		return "object"
	case bson.TypeArray:
		return "array"
	case bson.TypeBoolean:
		return "bool"
	case bson.TypeInt32:
		return "int"
	case bson.TypeInt64:
		return "long"
	case bson.TypeNull:
		return "null"
	case bson.TypeObjectID:
		return "objectId"
	case bson.TypeDateTime:
		return "date"
	case bson.TypeTimestamp:
		return "timestamp"
	case bson.TypeBinary:
		return "binData"
	}
	for name, bt := range bsonTypeAliases {
		if bt == t {
			return name
		}
	}
	return fmt.Sprintf("type %d", t)
}
