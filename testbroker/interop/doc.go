// Package interop checks testbroker with Kafka clients other than franz-go: sarama,
// segmentio/kafka-go and confluent-kafka-go (librdkafka). Each client runs the same checks
// against testbroker and against franz-go's kfake in one test run (TestInterop), so a difference
// between the two brokers shows as a difference in the table that -interop.table prints.
//
// It is a module of its own so that these clients stay out of kshare's dependencies. Its tests
// are all there is to it; kgo-suite.sh beside it runs franz-go's own kgo suite against the
// testbroker program. See docs/testbroker.md (Compatibility).
package interop
