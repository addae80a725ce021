"""The preview site (every card as Anki renders it, offline), and the Chromium launcher its tests share."""
