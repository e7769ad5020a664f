import tensorflow as tf
import time

# Simple model
model = tf.keras.Sequential([
    tf.keras.layers.Dense(128, activation='relu', input_shape=(100,)),
    tf.keras.layers.Dense(10, activation='softmax')
])

# Time execution on CPU
start_cpu = time.time()
with tf.device('/CPU:0'):
  model_cpu = tf.keras.models.clone_model(model)
end_cpu = time.time()
print(f"CPU model creation time: {end_cpu - start_cpu:.4f} seconds")

# Time execution on GPU
start_gpu = time.time()
with tf.device('/GPU:0'):
    model_gpu = tf.keras.models.clone_model(model)
end_gpu = time.time()
print(f"GPU model creation time: {end_gpu - start_gpu:.4f} seconds")
