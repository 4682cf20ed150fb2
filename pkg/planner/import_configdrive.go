package planner

// A config drive is not imported: it is built from its spec's user data
// and network config, which the ISO on the storage does not give back. A
// VM's CD-ROM that holds one is imported as the volume it names, and the
// ISO itself is not a DownloadedImage (import_download.go).
func (configDriveKind) NotImported() string {
	return "a config drive is built from its spec's user data, which the ISO on the storage does not give back; a VM's CD-ROM that holds one is imported as the volume it names"
}
