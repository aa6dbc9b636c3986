package mongo

import (
	"context"
	"errors"
	"fmt"

	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// Server error codes the operator acts on (mongo-replset-spec §9). Decisions
// are taken on these numbers, never on message text.
const (
	CodeBadValue                               int32 = 2
	CodeUserNotFound                           int32 = 11
	CodeUnauthorized                           int32 = 13
	CodeAuthenticationFailed                   int32 = 18
	CodeAlreadyInitialized                     int32 = 23
	CodeCommandNotFound                        int32 = 59
	CodeNodeNotFound                           int32 = 74
	CodeNoReplicationEnabled                   int32 = 76
	CodeShutdownInProgress                     int32 = 91
	CodeInvalidReplicaSetConfig                int32 = 93
	CodeNotYetInitialized                      int32 = 94
	CodeNotSecondary                           int32 = 95
	CodeNewReplicaSetConfigurationIncompatible int32 = 103
	CodeNodeNotElectable                       int32 = 104
	CodeConfigurationInProgress                int32 = 109
	CodeCannotInitializeNodeWithData           int32 = 110
	CodeConflictingOperationInProgress         int32 = 117
	CodeExceededTimeLimit                      int32 = 262
	CodeCurrentConfigNotCommittedYet           int32 = 308
	CodeNotWritablePrimary                     int32 = 10107
	CodeNotPrimaryNoSecondaryOk                int32 = 13435
	CodeNotPrimaryOrSecondary                  int32 = 13436
	CodeDuplicateUser                          int32 = 51003 // Location51003
)

// ServerError is an error reply of mongod ({ok: 0, code, codeName, errmsg}).
// Compare it by code: errors.Is(err, ErrNotYetInitialized) or IsCode(err, 94).
type ServerError struct {
	Code    int32
	Name    string
	Message string
	// Host is the member that answered, when known.
	Host string
}

func (e *ServerError) Error() string {
	s := fmt.Sprintf("mongod error %d (%s): %s", e.Code, e.Name, e.Message)
	if e.Host != "" {
		s = e.Host + ": " + s
	}
	return s
}

// Is matches another *ServerError with the same code, so the Err* values below
// work with errors.Is.
func (e *ServerError) Is(target error) bool {
	t, ok := target.(*ServerError)
	return ok && t.Code == e.Code
}

// Named server errors, for errors.Is.
var (
	ErrAlreadyInitialized             = &ServerError{Code: CodeAlreadyInitialized, Name: "AlreadyInitialized"}
	ErrNotYetInitialized              = &ServerError{Code: CodeNotYetInitialized, Name: "NotYetInitialized"}
	ErrInvalidReplicaSetConfig        = &ServerError{Code: CodeInvalidReplicaSetConfig, Name: "InvalidReplicaSetConfig"}
	ErrIncompatibleConfig             = &ServerError{Code: CodeNewReplicaSetConfigurationIncompatible, Name: "NewReplicaSetConfigurationIncompatible"}
	ErrNodeNotFound                   = &ServerError{Code: CodeNodeNotFound, Name: "NodeNotFound"}
	ErrNodeNotElectable               = &ServerError{Code: CodeNodeNotElectable, Name: "NodeNotElectable"}
	ErrNotWritablePrimary             = &ServerError{Code: CodeNotWritablePrimary, Name: "NotWritablePrimary"}
	ErrCurrentConfigNotCommittedYet   = &ServerError{Code: CodeCurrentConfigNotCommittedYet, Name: "CurrentConfigNotCommittedYet"}
	ErrConfigurationInProgress        = &ServerError{Code: CodeConfigurationInProgress, Name: "ConfigurationInProgress"}
	ErrUnauthorized                   = &ServerError{Code: CodeUnauthorized, Name: "Unauthorized"}
	ErrAuthenticationFailed           = &ServerError{Code: CodeAuthenticationFailed, Name: "AuthenticationFailed"}
	ErrUserNotFound                   = &ServerError{Code: CodeUserNotFound, Name: "UserNotFound"}
	ErrDuplicateUser                  = &ServerError{Code: CodeDuplicateUser, Name: "Location51003"}
	ErrExceededTimeLimit              = &ServerError{Code: CodeExceededTimeLimit, Name: "ExceededTimeLimit"}
	ErrNotSecondary                   = &ServerError{Code: CodeNotSecondary, Name: "NotSecondary"}
	ErrCannotInitializeNodeWithData   = &ServerError{Code: CodeCannotInitializeNodeWithData, Name: "CannotInitializeNodeWithData"}
	ErrConflictingOperationInProgress = &ServerError{Code: CodeConflictingOperationInProgress, Name: "ConflictingOperationInProgress"}
)

// IsCode reports whether err is a server error with the given code.
func IsCode(err error, code int32) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Code == code
}

// ErrUnreachable is the kind of every error where the member could not be
// talked to (refused, reset, DNS, TLS, server selection timed out): the
// member may be down or partitioned; nothing is known of its state.
var ErrUnreachable = errors.New("mongo: member unreachable")

// ErrTimeout is the kind of errors where the member was reached but did not
// answer within the call's deadline; the command may still take effect.
var ErrTimeout = errors.New("mongo: call timed out")

// CallError is a failed call that is not a server reply: its Kind is
// ErrUnreachable or ErrTimeout (errors.Is works with both).
type CallError struct {
	Host string
	Op   string
	Kind error
	Err  error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("%s %s: %v: %v", e.Op, e.Host, e.Kind, e.Err)
}

// Unwrap returns the kind and the cause.
func (e *CallError) Unwrap() []error { return []error{e.Kind, e.Err} }

// IsUnreachable reports whether err says the member could not be talked to.
func IsUnreachable(err error) bool { return errors.Is(err, ErrUnreachable) }

// classify turns a driver error into a *ServerError or a *CallError.
func classify(host, op string, err error) error {
	if err == nil {
		return nil
	}
	var ce driver.CommandError
	if errors.As(err, &ce) && (ce.Code != 0 || ce.Name != "" && !driver.IsNetworkError(err)) {
		return &ServerError{Code: ce.Code, Name: ce.Name, Message: ce.Message, Host: host}
	}
	var sse topology.ServerSelectionError
	switch {
	case errors.As(err, &sse), driver.IsNetworkError(err) && !driver.IsTimeout(err):
		return &CallError{Host: host, Op: op, Kind: ErrUnreachable, Err: err}
	case driver.IsTimeout(err), errors.Is(err, context.DeadlineExceeded):
		if driver.IsNetworkError(err) {
			// A connect that timed out never reached the member.
			return &CallError{Host: host, Op: op, Kind: ErrUnreachable, Err: err}
		}
		return &CallError{Host: host, Op: op, Kind: ErrTimeout, Err: err}
	}
	return fmt.Errorf("%s %s: %w", op, host, err)
}
