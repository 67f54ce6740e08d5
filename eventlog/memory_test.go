package eventlog_test

import (
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) eventlog.Store {
		return eventlog.NewMemoryStore()
	})
}
