"""Printing (being written)."""
import numpy as np

array2string = np.array2string
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
