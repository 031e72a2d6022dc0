"""Recent changes rendered for a prompt (``context``): ``changes`` by change, ``entities`` by
entity, ``shape`` what both share (bounds, checks, the last line).
"""
