"""What a repository's files are read into before any memory is built: the scan (what is
tracked, what is a secret, what stays inside the repository), languages, chunks, sections."""
