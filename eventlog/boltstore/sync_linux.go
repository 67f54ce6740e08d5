package boltstore

import (
	"errors"
	"os"
	"syscall"
)

// datasync makes f's written bytes durable, and the metadata needed to
// read them back, without the rest of its metadata: one fdatasync.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// preallocate reserves size bytes for f, so that appends within them
// change neither its length nor its extents' allocation; where the file
// system cannot, it sets the length only.
func preallocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}
