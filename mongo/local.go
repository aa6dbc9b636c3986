package mongo

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Local is what a member holds in its local database: the replica-set config
// it last installed (nil when it never had one) and its newest oplog entry
// (zero when its oplog is empty or absent).
type Local struct {
	Config    *Config
	LastOplog OpTime
}

// Local implements Admin: a find on local.system.replset and the newest entry
// of local.oplog.rs (natural order, backwards). Reads of the local database
// are served in every member state.
func (c *Client) Local(ctx context.Context, host string) (Local, error) {
	var out Local
	var cfg struct {
		Cursor struct {
			FirstBatch []Config `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	find := bson.D{{Key: "find", Value: "system.replset"}, {Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}}
	if err := c.runIn(ctx, host, "local", "find local.system.replset", true, find, &cfg); err != nil {
		return out, err
	}
	if len(cfg.Cursor.FirstBatch) > 0 {
		out.Config = &cfg.Cursor.FirstBatch[0]
	}
	var oplog struct {
		Cursor struct {
			FirstBatch []OpTime `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	find = bson.D{{Key: "find", Value: "oplog.rs"}, {Key: "sort", Value: bson.D{{Key: "$natural", Value: -1}}},
		{Key: "projection", Value: bson.D{{Key: "ts", Value: 1}, {Key: "t", Value: 1}, {Key: "_id", Value: 0}}},
		{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}}
	if err := c.runIn(ctx, host, "local", "find local.oplog.rs", true, find, &oplog); err != nil {
		return out, err
	}
	if len(oplog.Cursor.FirstBatch) > 0 {
		out.LastOplog = oplog.Cursor.FirstBatch[0]
	}
	return out, nil
}
