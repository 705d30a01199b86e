package fileio

// RootFS is the FS of a Local confined to dir by descriptor, as NewRooted makes it.
func RootFS(dir string) FS { return rootFS{dir: dir} }
