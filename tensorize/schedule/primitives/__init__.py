"""Schedule primitives, grouped by kind; each module holds one mixin of ``Schedule``."""
