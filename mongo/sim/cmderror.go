package sim

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// CmdError is a command failure in mongod's shape.
type CmdError struct {
	Code   int32
	Msg    string
	Labels []string
	Extra  bson.D
}

func (e *CmdError) Error() string { return fmt.Sprintf("%s (%d): %s", codeName(e.Code), e.Code, e.Msg) }

func cerr(code int32, format string, a ...any) *CmdError {
	return &CmdError{Code: code, Msg: fmt.Sprintf(format, a...)}
}

var codeNames = map[int32]string{
	1: "InternalError", 2: "BadValue", 4: "NoSuchKey", 6: "HostUnreachable", 9: "FailedToParse", 11: "UserNotFound",
	13: "Unauthorized", 14: "TypeMismatch", 18: "AuthenticationFailed", 23: "AlreadyInitialized", 26: "NamespaceNotFound",
	31: "RoleNotFound", 40: "ConflictingUpdateOperators", 43: "CursorNotFound", 48: "NamespaceExists", 50: "MaxTimeMSExpired",
	59: "CommandNotFound", 64: "WriteConcernTimeout", 72: "InvalidOptions",
	73: "InvalidNamespace", 74: "NodeNotFound", 76: "NoReplicationEnabled", 79: "UnknownReplWriteConcern",
	91: "ShutdownInProgress", 93: "InvalidReplicaSetConfig", 94: "NotYetInitialized", 95: "NotSecondary",
	100: "UnsatisfiableWriteConcern", 103: "NewReplicaSetConfigurationIncompatible", 104: "NodeNotElectable",
	109: "ConfigurationInProgress", 110: "CannotInitializeNodeWithData", 117: "ConflictingOperationInProgress",
	20: "IllegalOperation", 112: "WriteConflict", 225: "TransactionTooOld", 239: "SnapshotTooOld", 246: "SnapshotUnavailable",
	251: "NoSuchTransaction", 256: "TransactionCommitted", 263: "OperationNotSupportedInTransaction",
	186: "ClientMetadataCannotBeMutated", 189: "PrimarySteppedDown", 223: "IllegalOpMsgFlag", 262: "ExceededTimeLimit",
	303: "SplitHorizonChange", 308: "CurrentConfigNotCommittedYet", 352: "UnsupportedOpQueryCommand",
	10107: "NotWritablePrimary", 11000: "DuplicateKey", 11600: "InterruptedAtShutdown", 11602: "InterruptedDueToReplStateChange",
	13435: "NotPrimaryNoSecondaryOk", 13436: "NotPrimaryOrSecondary", 51003: "Location51003", 31368: "Location31368",
	31372: "Location31372", 31382: "Location31382", 40621: "Location40621",
	17: "ProtocolError", 66: "ImmutableField", 115: "CommandNotSupported", 125: "CommandFailed",
	28: "PathNotViable", 52: "DollarPrefixedFieldName", 54: "NotSingleValueField", 56: "EmptyFieldName",
	27: "IndexNotFound", 67: "CannotCreateIndex", 85: "IndexOptionsConflict",
	86: "IndexKeySpecsConflict", 171: "CannotIndexParallelArrays", 197: "InvalidIndexSpecificationOption",
	185: "InconsistentReplicaSetNames", 31373: "Location31373", 51024: "Location51024", 96: "OperationFailed",
	// aggregation
	15: "Overflow", 146: "ExceededMemoryLimit", 168: "InvalidPipelineOperator", 241: "ConversionFailure",
}

func codeName(c int32) string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("Location%d", c)
}

var notPrimaryCodes = map[int32]bool{10107: true, 13435: true, 13436: true, 189: true, 11602: true}
var retryableCodes = map[int32]bool{10107: true, 13435: true, 13436: true, 189: true, 91: true, 11600: true,
	11602: true, 262: true, 6: true, 7: true, 89: true, 9001: true}

func (n *Node) errorDoc(e *CmdError, retryableWrite bool) bson.D {
	d := bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: e.Msg}, {Key: "code", Value: e.Code}, {Key: "codeName", Value: codeName(e.Code)}}
	d = append(d, e.Extra...)
	labels := e.Labels
	if retryableWrite && retryableCodes[e.Code] {
		labels = append(labels, "RetryableWriteError")
	}
	if len(labels) > 0 {
		d = append(d, bson.E{Key: "errorLabels", Value: labels})
	}
	if n.cfg.ReplSet != "" && (notPrimaryCodes[e.Code] || (e.Code == 91 || e.Code == 11600)) {
		d = append(d, bson.E{Key: "topologyVersion", Value: n.replState().topologyVersion(n.processID)})
	}
	return d
}
