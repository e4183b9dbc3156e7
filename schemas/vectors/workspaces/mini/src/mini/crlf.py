def windows_line_endings() -> str:
    return "CRLF in the file, LF in the chunk"
