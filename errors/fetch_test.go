package errors_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

func TestFetchErrors(t *testing.T) {
	t.Parallel()
	truncated := errors.New("record data is truncated")
	for _, tc := range []struct {
		name string
		err  error
		want string
		is   []error
	}{
		{
			name: "corrupt batch",
			err:  &errors.CorruptBatchError{Topic: "orders", Partition: 3, Offsets: []int64{10, 11, 12}, Err: truncated},
			want: "shareconsumer: corrupt record batch in orders-3 (offsets 10-12, rejected unless acknowledged otherwise): record data is truncated",
			is:   []error{kerr.CorruptMessage, truncated},
		},
		{
			name: "partition refused by Kafka",
			err:  &errors.PartitionError{Topic: "orders", Partition: 3, Err: errors.FromKafka(kerr.TopicAuthorizationFailed.Code, nil)},
			want: "shareconsumer: fetching orders-3: " + kerr.TopicAuthorizationFailed.Error(),
			is:   []error{kerr.TopicAuthorizationFailed},
		},
		{
			name: "partition refused by the consumer",
			err:  &errors.PartitionError{Topic: "t", Partition: 0, Err: errors.ErrTooManyAcquired},
			want: "shareconsumer: fetching t-0: the broker acquired more than 1048576 offsets of the partition in one answer",
			is:   []error{errors.ErrTooManyAcquired},
		},
		{
			name: "broker",
			err:  &errors.BrokerError{Broker: 2, Err: errors.FromKafka(kerr.GroupAuthorizationFailed.Code, nil)},
			want: "shareconsumer: broker 2: " + kerr.GroupAuthorizationFailed.Error(),
			is:   []error{kerr.GroupAuthorizationFailed},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.EqualError(t, tc.err, tc.want)
			for _, target := range tc.is {
				assert.ErrorIs(t, fmt.Errorf("poll: %w", tc.err), target)
			}
		})
	}
}
