package mongo

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Server parameters and the oplog's size: what spec.config applies to a
// running member (docs/design/mongod-config.md).

// Parameters is getParameter of names on host, each value as text
// ("true", "1"; a whole double as an integer), so it compares with the
// spec's. A name the member does not know is absent.
func (c *Client) Parameters(ctx context.Context, host string, names []string) (map[string]string, error) {
	cmd := bson.D{{Key: "getParameter", Value: 1}}
	for _, n := range names {
		cmd = append(cmd, bson.E{Key: n, Value: 1})
	}
	var reply bson.Raw
	if err := c.run(ctx, host, "getParameter", true, cmd, &reply); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		if v, err := reply.LookupErr(n); err == nil {
			out[n] = ParameterText(v)
		}
	}
	return out, nil
}

// ParameterText is a parameter's value as text: booleans as true/false,
// numbers in decimal without a fraction when they are whole.
func ParameterText(v bson.RawValue) string {
	switch v.Type {
	case bson.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bson.TypeInt32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bson.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'f', -1, 64)
	case bson.TypeString:
		return v.StringValue()
	}
	return v.String()
}

// SetParameters sets each parameter on host, one setParameter command per
// parameter as mongod documents it, in name order; values are typed (bool,
// int64, string) as the parameter takes them.
func (c *Client) SetParameters(ctx context.Context, host string, values map[string]any) error {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		cmd := bson.D{{Key: "setParameter", Value: 1}, {Key: n, Value: values[n]}}
		if err := c.run(ctx, host, "setParameter", true, cmd, nil); err != nil {
			return fmt.Errorf("setParameter %s: %w", n, err)
		}
	}
	return nil
}

// OplogSizeMB is the maximum size of host's oplog in megabytes (collStats
// of local.oplog.rs, maxSize), as replSetResizeOplog or --oplogSize set it.
func (c *Client) OplogSizeMB(ctx context.Context, host string) (int64, error) {
	var reply struct {
		MaxSize float64 `bson:"maxSize"`
	}
	cmd := bson.D{{Key: "collStats", Value: "oplog.rs"}, {Key: "scale", Value: 1}}
	if err := c.runIn(ctx, host, "local", "collStats", true, cmd, &reply); err != nil {
		return 0, err
	}
	return int64(reply.MaxSize) >> 20, nil
}

// ResizeOplog is replSetResizeOplog on host (each member's oplog is its
// own): mongod takes the size as a double of megabytes, at least 990.
func (c *Client) ResizeOplog(ctx context.Context, host string, sizeMB int64) error {
	cmd := bson.D{{Key: "replSetResizeOplog", Value: 1}, {Key: "size", Value: float64(sizeMB)}}
	return c.run(ctx, host, "replSetResizeOplog", true, cmd, nil)
}

// ConfigRole is the role of the admin database the operator grants its
// own user for spec.config: setParameter and replSetResizeOplog on the
// cluster, nothing else (the built-in hostManager would add shutdown,
// killop, fsync and more).
const ConfigRole = "mgors-config"

// codeDuplicateRole is createRole's answer for a role that exists.
const codeDuplicateRole int32 = 51002

// GrantConfigRole creates ConfigRole when it does not exist and grants it
// to user, on the primary, each waiting for a majority within the call's
// deadline. Both steps may be repeated.
func (c *Client) GrantConfigRole(ctx context.Context, host, user string) error {
	wc := bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: c.serverWait(ctx).Milliseconds()}}}
	create := bson.D{{Key: "createRole", Value: ConfigRole},
		{Key: "privileges", Value: bson.A{bson.D{
			{Key: "resource", Value: bson.D{{Key: "cluster", Value: true}}},
			{Key: "actions", Value: bson.A{"setParameter", "replSetResizeOplog"}},
		}}},
		{Key: "roles", Value: bson.A{}}, wc}
	if err := c.run(ctx, host, "createRole", true, create, nil); err != nil && !IsCode(err, codeDuplicateRole) {
		return err
	}
	grant := bson.D{{Key: "grantRolesToUser", Value: user},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: ConfigRole}, {Key: "db", Value: "admin"}}}}, wc}
	return c.run(ctx, host, "grantRolesToUser", true, grant, nil)
}
