"""What Anki sees: every id (GUIDs, note-type, field and deck ids), the frozen note types, the .apkg writer (the only genanki import) and the reader of what it wrote."""
