package actors

import (
	"errors"

	"github.com/mgors/operator/mongo"
)

// Conclude turns an action's result into events: finished (with the facts it
// established) or failed (with the server's code when there is one).
//
// Two failures are the world already having the effect, and are recorded as
// such: an initiate refused because the set is already initiated (someone,
// perhaps this operator before a crash, got there first), and a user creation
// refused because the user exists.
func Conclude(a Action, err error) []Event {
	observed := false
	switch {
	case err == nil:
	case a.Kind == ActInitiate && errors.Is(err, mongo.ErrAlreadyInitialized):
		observed = true
	case (a.Kind == ActCreateUser || a.Kind == ActCreateOperatorUser) && codeOf(err) == mongo.CodeDuplicateUser:
		observed = true
	case uncertain(a, err):
		return []Event{ActionUncertain{Action: a.Kind, Target: target(a), Error: err.Error()}}
	default:
		return []Event{ActionFailed{Action: a.Kind, Target: target(a), Error: err.Error(), Code: codeOf(err)}}
	}
	out := []Event{ActionFinished{Action: a.Kind, Target: target(a), Observed: observed}}
	if observed {
		switch a.Kind {
		case ActInitiate:
			return append(out, Initiated{Host: a.Host, ConfigVersion: a.Config.Version, Found: true})
		case ActCreateUser:
			return append(out, AdminUserReady{User: "admin", Found: true})
		case ActCreateOperatorUser:
			return append(out, OperatorUserReady{User: a.Credential.User, Secret: a.Credential.Secret, Found: true})
		}
	}
	switch a.Kind {
	case ActInitiate:
		out = append(out, Initiated{Host: a.Host, ConfigVersion: a.Config.Version})
	case ActCreateUser:
		out = append(out, AdminUserReady{User: "admin"})
	case ActScale:
		out = append(out, ScaledTo{Replicas: a.Replicas})
	case ActCreateOperatorUser:
		out = append(out, OperatorUserReady{User: a.Credential.User, Secret: a.Credential.Secret})
	case ActUpdatePassword:
		out = append(out, PasswordApplied(a.Credential))
	}
	return out
}

func target(a Action) string {
	if a.Host != "" {
		return a.Host
	}
	switch a.Kind {
	case ActScale:
		return "statefulset"
	case ActSetBudget:
		return "poddisruptionbudget"
	}
	return ""
}

// codeOf is the MongoDB server error code in err, 0 when there is none.
func codeOf(err error) int32 {
	var se *mongo.ServerError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}
