// Package acktype defines how an application can deal with a record it received from a share
// group, and the form those acknowledgements take on the wire.
//
// A record is acknowledged with one of four types (KIP-932, KIP-1222):
//
//   - [Accept]: processed; the record is done.
//   - [Release]: not processed; the broker delivers it again, to this or another consumer.
//   - [Reject]: unprocessable; the broker never delivers it again.
//   - [Renew]: still being processed; the broker extends the record's acquisition lock and the
//     record must be acknowledged again later. Brokers older than Kafka 4.2 reject it.
//
// The wire has a fifth value, [Gap] (0): the client sends it for an acquired offset that held no
// record (removed by compaction, or a transaction marker). Applications never use it.
//
// Acknowledgements travel in batches ([Batch]): one per run of consecutive offsets, carrying a
// single type when every offset of the run has it and one type per offset otherwise, with long
// same-type stretches split into batches of their own. [AppendBatches] builds them exactly as
// Kafka's Java client does; an [Accumulator] collects one partition's acknowledgements until they
// are sent.
package acktype
