// Package group is the fake cluster's group coordinator: it holds every group of the cluster,
// whatever its type (classic, consumer, share, streams), and runs the membership protocol of
// share groups (KIP-932) and classic groups the way Kafka's GroupMetadataManager does.
//
// A share group is created by the first ShareGroupHeartbeat with member epoch 0. Each
// heartbeat may change the member's subscription; the group epoch is bumped when a member
// joins, leaves, is fenced or changes its subscription, and when the subscribed topics'
// metadata (ids, partition counts) changes. The target assignment is recomputed (by the
// "simple" assignor, see AssignShare) whenever the group epoch moves past the assignment epoch.
// There is no revocation phase: a heartbeating member jumps straight to its target assignment
// and epoch; other members catch up on their own next heartbeat.
//
// A member that does not heartbeat within its session timeout (share.session.timeout.ms, on
// the cluster clock) is removed and the group epoch bumped. Removal from the group does not
// release the records the member acquired: Kafka leaves that to the acquisition locks and to
// share-session close.
//
// Consumer groups (KIP-848, consumer*.go) are run as Kafka's GroupMetadataManager,
// ConsumerGroup and CurrentAssignmentBuilder do: ConsumerHeartbeat documents the rules,
// reconciliation the revocation protocol and AssignConsumer the uniform and range assignors.
//
// Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) run the state machine of
// Kafka's ClassicGroup, with their session, rebalance and initial-delay timers on the cluster
// clock; a JoinGroup or SyncGroup is answered on a channel when the rebalance answers it.
// Committed offsets (OffsetCommit, OffsetFetch, OffsetDelete) live with their group, whatever
// its kind, as Kafka's OffsetMetadataManager keeps them; ListGroups and DeleteGroups cover every
// group type.
//
// The share-group offset RPCs (AlterShareGroupOffsets, DeleteShareGroupOffsets) are checked
// here, as Kafka's coordinator checks them: only a share group without members may have its
// share state changed, and the change runs under the coordinator's lock so that no member joins
// meanwhile. The share state itself lives with the share partitions, outside this package.
//
// Errors carry Kafka's error codes and messages (Error); the server copies them into the
// responses' ErrorCode and ErrorMessage fields.
package group
