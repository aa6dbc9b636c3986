package sim

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestHorizonsValidation(t *testing.T) {
	member := func(id int, host string, horizons any) bson.D {
		d := bson.D{{Key: "_id", Value: id}, {Key: "host", Value: host}}
		if horizons != nil {
			d = append(d, bson.E{Key: "horizons", Value: horizons})
		}
		return d
	}
	cfg := func(members ...bson.D) bson.Raw {
		arr := bson.A{}
		for _, m := range members {
			arr = append(arr, m)
		}
		return mustRaw(bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: 1}, {Key: "members", Value: arr}})
	}
	for _, tc := range []struct {
		name string
		cfg  bson.Raw
		want string // "" valid
	}{
		{"same names", cfg(member(0, "a:1", bson.D{{Key: "ext", Value: "a.example:27017"}}), member(1, "b:1", bson.D{{Key: "ext", Value: "b.example:27017"}})), ""},
		{"empty", cfg(member(0, "a:1", bson.D{})), "The horizons field cannot be empty, if present."},
		{"reserved", cfg(member(0, "a:1", bson.D{{Key: "__default", Value: "x:1"}})), `Horizon name "__default" is reserved for internal mongodb usage`},
		{"non-string", cfg(member(0, "a:1", bson.D{{Key: "ext", Value: 1}})), "horizons.ext field has non-string value of type int"},
		{"duplicate name", cfg(member(0, "a:1", bson.D{{Key: "ext", Value: "x:1"}, {Key: "ext", Value: "y:1"}})), `Duplicate horizon name found "ext".`},
		{"own host", cfg(member(0, "a:1", bson.D{{Key: "ext", Value: "a:1"}})), `Duplicate horizon member found "a:1".`},
		{"missing on one", cfg(member(0, "a:1", bson.D{{Key: "ext", Value: "x:1"}}), member(1, "b:1", nil)),
			"Saw a replica set member with a different horizon mapping than the others.  The following horizons were not universally present: ext"},
		{"shared endpoint", cfg(member(0, "a:1", bson.D{{Key: "ext", Value: "x:1"}}), member(1, "b:1", bson.D{{Key: "ext", Value: "x:1"}})),
			"The following hostnames are not unique across all horizons and host specifications in the replica set: x:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseRSConfig(tc.cfg, false)
			if err == nil {
				err = c.Validate()
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid config refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}
