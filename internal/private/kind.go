package private

import "io/fs"

// Kind names the kind of file mode says, for a message: "a directory", "a
// symbolic link", "a named pipe", "a device", "a socket" or "a regular
// file".
func Kind(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "a device"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t == 0:
		return "a regular file"
	}
	return "a special file"
}
