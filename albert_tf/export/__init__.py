"""Exports: the released checkpoint layout, and SavedModels with serving signatures."""
