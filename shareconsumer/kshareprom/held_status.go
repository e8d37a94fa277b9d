//go:build hooksmerged

package kshareprom

import "github.com/kshare/kshare/shareconsumer"

// heldOf returns the records c holds now: Poll's and Process's.
func heldOf(c *shareconsumer.Consumer) int { return c.Status().Held }
