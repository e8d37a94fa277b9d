package errors

// PollReason says why a consumer has no records to return, from what it knows of the cluster.
type PollReason int8

// The reasons, roughly in the order a consumer gets past them on its way to records.
const (
	// ReasonNone: nothing stands in the way; records are coming, or held for the next Poll.
	ReasonNone PollReason = iota
	// ReasonJoining: the member is joining the group (looking for the coordinator, or waiting
	// for its first heartbeat's answer or for the metadata of its assignment).
	ReasonJoining
	// ReasonNoBroker: the last attempt to connect to a broker failed; Detail has its address
	// and the dial error.
	ReasonNoBroker
	// ReasonNoCoordinator: brokers answer but name no coordinator for the group
	// (COORDINATOR_NOT_AVAILABLE, for one), or the coordinator refuses the heartbeat for now.
	ReasonNoCoordinator
	// ReasonUnknownTopic: a subscribed topic does not exist (UNKNOWN_TOPIC_OR_PARTITION in
	// metadata), and nothing of the subscription is assigned.
	ReasonUnknownTopic
	// ReasonNoPartitions: the member is in the group but assigned no partition; Detail says how
	// many members share how many partitions, when known.
	ReasonNoPartitions
	// ReasonFetching: partitions are assigned and their ShareFetches are on their way.
	ReasonFetching
	// ReasonNothingAvailable: every assigned partition was fetched and had no record
	// available: all are acknowledged, or acquired by other members.
	ReasonNothingAvailable
	// ReasonLeftGroup: the member left the group because the application did not poll within
	// MaxPollInterval (max.poll.interval.ms); the next Poll rejoins.
	ReasonLeftGroup
	// ReasonAuthentication: the last connection to a broker failed to authenticate (SASL
	// credentials refused, a TLS handshake that failed); Detail has the *AuthenticationError's
	// text, with the broker's address and Kafka's message.
	ReasonAuthentication
	// ReasonTopicAuthorization: a subscribed or assigned topic may not be read
	// (TOPIC_AUTHORIZATION_FAILED), and nothing else brings records; Detail names the topics
	// when the consumer knows them.
	ReasonTopicAuthorization
)

var reasonNames = [...]string{
	ReasonNone:             "records available",
	ReasonJoining:          "joining the group",
	ReasonNoBroker:         "no broker reachable",
	ReasonNoCoordinator:    "group coordinator not available",
	ReasonUnknownTopic:     "subscribed topic unknown",
	ReasonNoPartitions:     "no partitions assigned",
	ReasonFetching:         "fetching",
	ReasonNothingAvailable: "no records available",
	ReasonLeftGroup:        "left the group: max.poll.interval.ms passed without a Poll",

	ReasonAuthentication:     "authentication failed",
	ReasonTopicAuthorization: "not authorized for a topic",
}

// String returns the reason in words, for example "no broker reachable".
func (r PollReason) String() string {
	if r < 0 || int(r) >= len(reasonNames) {
		return "unknown reason"
	}
	return reasonNames[r]
}

// PollTimeoutError is what Poll returns when its context ends before records arrive: the
// context's error, with why nothing came. errors.Is(err, context.DeadlineExceeded) (or
// context.Canceled) holds for it, as for the bare context error.
type PollTimeoutError struct {
	Reason PollReason
	Detail string // what the consumer knows of the reason: an address, a Kafka error, counts
	Err    error  // the context's error; Unwrap returns it
}

// Error returns, for example, "poll ended without records (no broker reachable: dialing
// 127.0.0.1:9092: ... connection refused): context deadline exceeded".
func (e *PollTimeoutError) Error() string {
	why := e.Reason.String()
	if e.Detail != "" {
		why += ": " + e.Detail
	}
	return "poll ended without records (" + why + "): " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *PollTimeoutError) Unwrap() error { return e.Err }
