package sim_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// replSetGetStatus as mongod 7.0: optimes, lastStableRecoveryTimestamp,
// electionCandidateMetrics on the primary, electionParticipantMetrics on
// the members that voted.
func TestReplSetGetStatusElectionMetrics(t *testing.T) {
	// A 5 s election timeout: with 1 s, a busy machine splits the first
	// election or holds a second one, and the primary asked about may not
	// be the one the secondaries voted for.
	ms, p := initiated(t, 3, cloneSettings)
	pc := ms[p].client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pc.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority())).
		InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	ps := mustRun(t, pc, bson.D{{Key: "replSetGetStatus", Value: 1}})
	term := ps.Lookup("term").Int64()
	for _, k := range []string{"lastCommittedOpTime", "lastCommittedWallTime", "readConcernMajorityOpTime", "appliedOpTime",
		"durableOpTime", "lastAppliedWallTime", "lastDurableWallTime"} {
		if _, err := ps.LookupErr("optimes", k); err != nil {
			t.Errorf("optimes.%s missing", k)
		}
	}
	if _, _, ok := ps.Lookup("lastStableRecoveryTimestamp").TimestampOK(); !ok {
		t.Errorf("lastStableRecoveryTimestamp is not a timestamp: %v", ps.Lookup("lastStableRecoveryTimestamp"))
	}
	cm, ok := ps.Lookup("electionCandidateMetrics").DocumentOK()
	if !ok {
		t.Fatal("no electionCandidateMetrics on the primary")
	}
	if cm.Lookup("electionTerm").Int64() != term {
		t.Errorf("electionCandidateMetrics.electionTerm %v, term %d", cm.Lookup("electionTerm"), term)
	}
	for _, k := range []string{"lastElectionReason", "lastElectionDate", "numVotesNeeded", "priorityAtElection", "electionTimeoutMillis",
		"numCatchUpOps", "newTermStartDate", "wMajorityWriteAvailabilityDate"} {
		if _, err := cm.LookupErr(k); err != nil {
			t.Errorf("electionCandidateMetrics.%s missing", k)
		}
	}
	var myID int32
	mems, _ := ps.Lookup("members").Array().Values()
	for _, v := range mems {
		if self, _ := v.Document().Lookup("self").BooleanOK(); self {
			myID = v.Document().Lookup("_id").Int32()
		}
	}
	voters := 0
	for i, m := range ms {
		if i == p {
			continue
		}
		var pm bson.Raw
		waitFor(t, 20*time.Second, "the new term applied on "+m.host, func() bool {
			r, err := run(m.client(t), bson.D{{Key: "replSetGetStatus", Value: 1}})
			if err != nil {
				return false
			}
			pm, _ = r.Lookup("electionParticipantMetrics").DocumentOK()
			if pm == nil {
				return true // this member was not asked for its vote in time
			}
			_, err = pm.LookupErr("newTermAppliedDate")
			return err == nil || !pm.Lookup("votedForCandidate").Boolean()
		})
		if pm == nil || !pm.Lookup("votedForCandidate").Boolean() {
			continue
		}
		voters++
		if pm.Lookup("electionTerm").Int64() != term || pm.Lookup("electionCandidateMemberId").Int32() != myID {
			t.Errorf("%s: electionParticipantMetrics %v does not name term %d candidate %d", m.host, pm, term, myID)
		}
		for _, k := range []string{"lastVoteDate", "voteReason", "lastAppliedOpTimeAtElection", "maxAppliedOpTimeInSet",
			"priorityAtElection", "newTermStartDate", "newTermAppliedDate"} {
			if _, err := pm.LookupErr(k); err != nil {
				t.Errorf("%s: electionParticipantMetrics.%s missing", m.host, k)
			}
		}
	}
	if voters == 0 {
		t.Fatal("no secondary reports having voted for the primary")
	}
}
