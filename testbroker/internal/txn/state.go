package txn

// State is a transaction's state, as Kafka's TransactionState names it.
type State int8

// The states of a transactional id. Dead (an expired id) is never reached here: transactional
// ids do not expire.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{
	Empty:             "Empty",
	Ongoing:           "Ongoing",
	PrepareCommit:     "PrepareCommit",
	PrepareAbort:      "PrepareAbort",
	CompleteCommit:    "CompleteCommit",
	CompleteAbort:     "CompleteAbort",
	Dead:              "Dead",
	PrepareEpochFence: "PrepareEpochFence",
}

// String returns Kafka's name of the state, as DescribeTransactions and ListTransactions
// report it.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState returns the state named name (case-sensitive, as Kafka's TransactionState.fromName).
func ParseState(name string) (State, bool) {
	for s, n := range stateNames {
		if n == name {
			return State(s), true
		}
	}
	return 0, false
}

// Version is the transaction version a client speaks (the transaction.version feature).
type Version int8

// The transaction versions: V0 is the classic protocol, where the client adds every partition
// and the epoch stays for the producer's life; V2 (KIP-890 part 2) adds partitions implicitly on
// produce and bumps the epoch at the end of every transaction.
const (
	V0 Version = 0
	V2 Version = 2
)

func (v Version) bumpsEpoch() bool { return v >= V2 }

// maxEpoch is the highest producer epoch; epochs from maxEpoch-1 on are exhausted, so that the
// coordinator can always fence a producer with one more bump.
const maxEpoch = 32767

func epochExhausted(e int16) bool { return e >= maxEpoch-1 }

const noProducerID = -1
const noEpoch = -1
